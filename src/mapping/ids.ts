import type { Clock } from '../lib/clock.js';
import { legacyIdProblem } from '../lib/legacy-id.js';
import type { Logger } from '../lib/logger.js';
import { quoteInput } from '../lib/quote.js';
import { normalizeUuid, uuidToBase58 } from '../lib/uuid.js';
import type { CallStats, Observer } from '../observe/observer.js';
import type { IdMapRepository } from '../store/id-map.js';
import type { SuccessorClient, SuccessorQuery } from '../successor/client.js';
import { UpstreamError } from '../successor/errors.js';
import { iriToUuid } from '../successor/ids.js';
import { formEncoded } from '../successor/targets.js';
import { attributesValue, getPath, identityAttributes } from './attributes.js';
import type { CompiledKind, CompiledProfile } from './compile.js';
import { IdCache } from './id-cache.js';
import { PairMemo } from './memo.js';
import { renderText } from './template.js';

/** No attributes besides the identity: one array, so its attribute value is worked out once. */
const NOTHING: readonly string[] = [];

/**
 * How long a write waits for the store's names version before it trusts nothing cached instead
 * (see `#syncNames`); a store that answers at all answers in a few milliseconds.
 */
const NAMES_VERSION_WAIT_MS = 250;
const LATE = Symbol('late');

/** A successor entity as JSON. */
export type Entity = Record<string, unknown>;

/**
 * A legacy ID resolved to its successor entity; `entity` is set when the resolution read it, and
 * `cached` when the UUID came from the ID cache unread (a write trusts it: see `resolveOne`).
 */
export interface Resolved {
  uuid: string;
  entity?: Entity;
  cached?: true;
}

/** What an ID resolver needs. */
export interface IdResolverDeps {
  profile: CompiledProfile;
  successor: SuccessorClient;
  idMap: IdMapRepository;
  clock: Clock;
  /** Path of the successor API on its host, e.g. `/iserv/idm/api/v1` (for IRIs). */
  apiBase: string;
  logger: Logger;
  /** Told whether each cached resolution was a hit or a miss (metrics). */
  observer?: Pick<Observer, 'idCacheLookup'> | undefined;
}

/**
 * Legacy ID ↔ successor UUID for every kind, by its ID strategy (natural, uuid, table). Natural
 * resolutions are cached (lru-cache, TTL from profile.json) and kept right by the proxy's own
 * writes through `remember`/`forget`. Every resolution of many IDs is one successor call.
 */
export class IdResolver {
  readonly #deps: IdResolverDeps;
  readonly #cache: IdCache | undefined;

  /** Attribute query values by kind and wanted list (handlers and the executor pass constant lists). */
  readonly #attributeValues: PairMemo<CompiledKind, readonly string[], string>;

  /** `cache` and `attributeValues` are given only by `withSuccessor`: a resolver for one run shares its parent's. */
  constructor(
    deps: IdResolverDeps,
    cache?: IdCache,
    attributeValues?: PairMemo<CompiledKind, readonly string[], string>,
  ) {
    this.#deps = deps;
    this.#attributeValues = attributeValues ?? new PairMemo();
    const { ttlSeconds, max } = deps.profile.cache;
    this.#cache = cache ?? (ttlSeconds > 0 ? new IdCache({ ttlSeconds, max, clock: deps.clock }) : undefined);
    // A new cache learns the names version it starts from at once, so that its first write
    // trusting an entry need not drop what was cached before that (see #syncNames).
    if (!cache) void this.#syncNames();
  }

  /** The same resolver (same cache and store) calling the successor through `successor`. */
  withSuccessor(successor: SuccessorClient): IdResolver {
    // Object.assign rather than a spread: V8 (Node 20) copies `{ ...deps, successor }` on a slow path.
    return new IdResolver(Object.assign({}, this.#deps, { successor }), this.#cache, this.#attributeValues);
  }

  /** A natural resolution from the cache, counted as a hit or a miss. */
  #cached(kind: CompiledKind, legacyId: string): string | undefined {
    const uuid = this.peekCached(kind, legacyId);
    if (uuid === undefined) this.#countMiss();
    else this.#count('hit');
    return uuid;
  }

  #count(result: 'hit' | 'miss'): void {
    this.#deps.observer?.idCacheLookup?.(result);
  }

  /** Counts a resolution the cache could not serve (when there is a cache to ask). */
  #countMiss(): void {
    if (this.#cache) this.#count('miss');
  }

  /**
   * The cached UUID of a natural legacy ID, not counted: `readCached` counts what the read shows.
   * Undefined when it is not cached or the kind is not natural.
   */
  peekCached(kind: CompiledKind, legacyId: string): string | undefined {
    if (kind.id.strategy !== 'natural' || !this.#cache) return undefined;
    return this.#cache.get(cacheKey(kind, legacyId));
  }

  /**
   * Reads the entity of a cached natural ID (`peekCached`) with `want`: the entity, counted as a
   * cache hit; undefined when the UUID names nothing any more or an entity with another legacy ID
   * (purged or renamed behind the proxy's back). Then the entry is dropped and nothing is counted:
   * the fresh resolution that follows counts the miss. A failed read (not a 404) counts as a hit
   * and rejects like the client does.
   */
  async readCached(
    kind: CompiledKind,
    legacyId: string,
    uuid: string,
    want: readonly string[],
    calls?: CallStats,
  ): Promise<Entity | undefined> {
    let entity: Entity | undefined;
    try {
      entity = await this.read(kind, uuid, want, calls);
    } catch (error) {
      if (!(error instanceof UpstreamError && error.code === 'not_found')) {
        this.#count('hit');
        throw error;
      }
    }
    const id = kind.id;
    if (entity !== undefined && id.strategy === 'natural' && stringAt(entity, id.attribute) === legacyId) {
      this.#count('hit');
      return entity;
    }
    this.forget(kind, legacyId);
    return undefined;
  }

  /** The IRI of an entity, for request bodies. */
  iri(kind: CompiledKind, uuid: string): string {
    return renderText(kind.iri, (path) => this.#entityVariable(path[0], uuid));
  }

  /** The item path of an entity, relative to the successor base URL. */
  itemPath(kind: CompiledKind, uuid: string): string {
    return renderText(kind.item, (path) => this.#entityVariable(path[0], uuid), encodeURIComponent);
  }

  #entityVariable(name: string | undefined, uuid: string): string {
    if (name === 'uuid') return uuid;
    if (name === 'uuid58') return uuidToBase58(uuid);
    if (name === 'apiBase') return this.#deps.apiBase;
    return '';
  }

  /**
   * Resolves the path entity. With `want` (successor attributes) the entity is read as well, in
   * the same call where the strategy allows (a natural-ID filter query, or the item read by UUID).
   * Undefined when no such entity exists.
   */
  async resolveOne(
    kind: CompiledKind,
    legacyId: string,
    want?: readonly string[],
  ): Promise<Resolved | undefined> {
    const id = kind.id;
    if (id.strategy === 'natural') {
      if (!want) {
        if (this.peekCached(kind, legacyId) !== undefined) await this.#syncNames();
        const cached = this.#cached(kind, legacyId);
        if (cached !== undefined) return { uuid: cached, cached: true };
      } else {
        const cached = this.peekCached(kind, legacyId);
        const entity = cached === undefined ? undefined : await this.readCached(kind, legacyId, cached, want);
        if (cached !== undefined && entity) return { uuid: cached, entity };
        // Not cached, or a stale entry (dropped): resolved afresh by the successor, a miss.
        this.#countMiss();
      }
      const found = await this.#naturalQuery(kind, [legacyId], want ?? NOTHING);
      const entity = found.get(legacyId);
      return entity ? { uuid: this.#uuidOf(kind, entity), entity } : undefined;
    }
    let uuid: string | undefined;
    if (id.strategy === 'uuid') uuid = normalizeUuid(legacyId);
    else uuid = (await this.#deps.idMap.byLegacyIds(kind.name, [legacyId])).get(legacyId);
    if (uuid === undefined) return undefined;
    if (!want) return { uuid };
    const entity = await this.read(kind, uuid, want).catch(notFoundAsUndefined);
    return entity ? { uuid, entity } : undefined;
  }

  /**
   * Resolves many legacy IDs (of a link body) with at most one successor call: a filter query
   * with many values (natural), or a read by UUIDs that proves they exist (uuid, table). `cached`:
   * the IDs whose UUIDs came from the ID cache unread.
   */
  async resolveMany(
    kind: CompiledKind,
    legacyIds: readonly string[],
  ): Promise<{ found: Map<string, string>; missing: string[]; cached: Set<string> }> {
    const found = new Map<string, string>();
    const cached = new Set<string>();
    const id = kind.id;
    if (legacyIds.length === 0) return { found, missing: [], cached };
    if (id.strategy === 'natural') {
      if (legacyIds.some((legacyId) => this.peekCached(kind, legacyId) !== undefined))
        await this.#syncNames();
      const misses: string[] = [];
      for (const legacyId of legacyIds) {
        const uuid = this.#cached(kind, legacyId);
        if (uuid === undefined) misses.push(legacyId);
        else {
          found.set(legacyId, uuid);
          cached.add(legacyId);
        }
      }
      if (misses.length > 0) {
        const entities = await this.#naturalQuery(kind, misses, NOTHING);
        for (const [legacyId, entity] of entities) found.set(legacyId, this.#uuidOf(kind, entity));
      }
    } else {
      const candidates = new Map<string, string>();
      if (id.strategy === 'uuid') {
        for (const legacyId of legacyIds) {
          const uuid = normalizeUuid(legacyId);
          if (uuid !== undefined) candidates.set(legacyId, uuid);
        }
      } else {
        for (const [legacyId, uuid] of await this.#deps.idMap.byLegacyIds(kind.name, legacyIds))
          candidates.set(legacyId, uuid);
      }
      const existing = await this.#existingUuids(kind, [...new Set(candidates.values())]);
      for (const [legacyId, uuid] of candidates) if (existing.has(uuid)) found.set(legacyId, uuid);
    }
    return { found, missing: legacyIds.filter((legacyId) => !found.has(legacyId)), cached };
  }

  /**
   * Legacy IDs of references as the successor embeds them (objects with the sub-attributes
   * `idAttributes` asked for, or bare IRIs/UUIDs); null where a reference cannot be resolved.
   * At most one successor call (natural IDs given as IRIs) and one store query per call.
   */
  async toLegacy(
    kind: CompiledKind,
    refs: readonly unknown[],
    calls?: CallStats,
  ): Promise<(string | null)[]> {
    const id = kind.id;
    const { out, pending } = this.#legacyInline(kind, refs);
    if (pending.length === 0) return out;
    const uuids = [...new Set(pending.map((p) => p.uuid))];
    if (id.strategy === 'natural') {
      // The successor gave IRIs instead of embedded objects: one read of all of them by UUID.
      const entities = await this.#readByUuids(kind, uuids, NOTHING, calls);
      for (const p of pending) {
        const entity = entities.get(p.uuid);
        out[p.index] = entity ? (stringAt(entity, id.attribute) ?? null) : null;
      }
      return out;
    }
    const mapped = await this.#deps.idMap.byUuids(kind.name, uuids);
    for (const p of pending) {
      let legacyId = mapped.get(p.uuid);
      if (legacyId === undefined) {
        legacyId = await this.assign(kind, p.uuid, typeof p.ref === 'object' ? p.ref : undefined);
        mapped.set(p.uuid, legacyId);
      }
      out[p.index] = legacyId;
    }
    return out;
  }

  /**
   * `toLegacy` at once, without waiting, when the references carry their legacy IDs themselves
   * (embedded natural IDs, UUIDs); undefined when some need the successor or the store.
   */
  toLegacyAtOnce(kind: CompiledKind, refs: readonly unknown[]): (string | null)[] | undefined {
    const { out, pending } = this.#legacyInline(kind, refs);
    return pending.length === 0 ? out : undefined;
  }

  /**
   * The legacy ID one reference carries itself (an embedded natural ID, a UUID); null for no
   * reference or one without an ID; undefined when it needs a look-up (an IRI of a natural kind,
   * any reference of a `table` kind).
   */
  legacyAtOnce(kind: CompiledKind, ref: unknown): string | null | undefined {
    if (ref === null || ref === undefined) return null;
    const id = kind.id;
    if (id.strategy === 'natural' && typeof ref === 'object') {
      // An embedded object without the attribute asked for (a successor that embeds relations as
      // `{"@id", "@type"}` only) is a reference like an IRI: looked up by its UUID, never read as
      // "no ID", which would drop it from a list silently. One that has it as null has no ID.
      const value = getPath(ref, id.attribute);
      if (value !== undefined)
        return typeof value === 'string' || typeof value === 'number' ? String(value) : null;
    }
    const uuid = referenceUuid(kind, ref);
    if (uuid === undefined) return null;
    return id.strategy === 'uuid' ? uuid : undefined;
  }

  /** The legacy IDs the references carry themselves, and those that need a look-up (`pending`). */
  #legacyInline(
    kind: CompiledKind,
    refs: readonly unknown[],
  ): { out: (string | null)[]; pending: { index: number; uuid: string; ref: unknown }[] } {
    const out: (string | null)[] = refs.map(() => null);
    const pending: { index: number; uuid: string; ref: unknown }[] = [];
    refs.forEach((ref, index) => {
      const legacyId = this.legacyAtOnce(kind, ref);
      // Undefined only for a reference with a UUID that needs a look-up.
      const uuid = legacyId === undefined ? referenceUuid(kind, ref) : undefined;
      if (uuid !== undefined) pending.push({ index, uuid, ref });
      else out[index] = legacyId ?? null;
    });
    return { out, pending };
  }

  /** The legacy ID of a `table` kind entity that has none yet, by the kind's assignment rule (persisted). */
  async assign(kind: CompiledKind, uuid: string, entity: unknown): Promise<string> {
    const id = kind.id;
    if (id.strategy !== 'table') return uuid;
    const { idMap, clock } = this.#deps;
    const tryInsert = async (legacyId: string) =>
      idMap.insert({ kind: kind.name, legacyId, uuid, source: 'assigned' }, clock.now());
    const existing = async () => (await idMap.byUuids(kind.name, [uuid])).get(uuid);
    // One atomic step in the store: replicas sharing it never hand out one number twice.
    const sequence = async (prefix: string, start: number) =>
      (await idMap.assignSequence(kind.name, prefix, start, uuid, clock.now())).legacyId;
    const rule = id.assign;
    if (rule.rule === 'sequence') return sequence(rule.prefix, rule.start);
    if (rule.rule === 'attribute' && rule.path) {
      const value = stringAt(entity, rule.path);
      // A value no legacy call could address (a name with "/", over 255 bytes, …) is no ID: the UUID is.
      if (value !== undefined && legacyIdProblem(value) === undefined) {
        const result = await tryInsert(value);
        if (result === 'inserted') return value;
        if (result === 'uuid-mapped') return (await existing()) ?? sequence(`${uuid}-`, 2);
      }
    }
    const result = await tryInsert(uuid);
    if (result === 'inserted') return uuid;
    // 'uuid-mapped': another request (or an import) gave it an ID meanwhile. 'legacy-taken': the
    // dashed UUID is already another entity's legacy ID (an imported ID that is a UUID): handing it
    // out would give two entities one _id. Either way the ID answered is a saved row of this UUID:
    // `<uuid>-2`, `-3`, … when its own UUID is taken.
    return (result === 'uuid-mapped' ? await existing() : undefined) ?? sequence(`${uuid}-`, 2);
  }

  /**
   * Reads one entity by UUID with the given attributes (plus its identity); rejects like the client
   * does. `calls`: the legacy request's counter, for a resolver whose successor does not count.
   */
  async read(kind: CompiledKind, uuid: string, want: readonly string[], calls?: CallStats): Promise<Entity> {
    const response = await this.#deps.successor.request({
      method: 'GET',
      path: this.itemPath(kind, uuid),
      query: { [this.#deps.profile.attributesParam]: this.#attributes(kind, want) },
      calls,
    });
    return asEntity(response.body, `GET ${kind.label} ${uuid}`);
  }

  /**
   * Now, for `remember`: taken before the successor calls whose answers it will note, so that an
   * ID forgotten meanwhile (a concurrent rename) is not put back.
   */
  ticket(): number {
    return this.#cache?.ticket() ?? 0;
  }

  /**
   * Notes a legacy ID → UUID pair seen in a successor answer (natural kinds; others need no cache),
   * unless that ID was forgotten after `ticket` (see `ticket`). `writtenAs`: the legacy ID a write
   * that answered `entity` was addressed by; an answer under another ID is a rename, its own or a
   * concurrent one, which drops every cached ID of the entity first (see IdCache.rename).
   */
  remember(kind: CompiledKind, entity: Entity, ticket: number, own?: number, writtenAs?: string): boolean {
    if (kind.id.strategy !== 'natural') return false;
    const legacyId = stringAt(entity, kind.id.attribute);
    const uuid = normalizeUuid(String(getPath(entity, kind.uuidAttribute) ?? ''));
    if (legacyId === undefined || uuid === undefined) return false;
    const renamed = writtenAs !== undefined && writtenAs !== legacyId;
    if (renamed) this.#cache?.rename(cacheKey(kind, legacyId), uuid, ticket, own);
    else this.#cache?.set(cacheKey(kind, legacyId), uuid, ticket, own);
    return renamed;
  }

  /**
   * Tells the processes sharing the store that an entity was renamed (`remember` answered true):
   * each drops its cached resolutions before its next write trusts one unread (`#syncNames`), so
   * that a write addressed by the old ID, sent to another replica after the rename was answered,
   * does not reach the renamed entity. Failing that (the store unavailable), the rename stands and
   * the others may use the old ID until their cache's TTL ends: said in a warning.
   */
  async noteRename(kind: CompiledKind, legacyId: string): Promise<void> {
    try {
      const version = await this.#deps.idMap.bumpNamesVersion();
      this.#cache?.ownNamesChange(version);
    } catch (error) {
      this.#deps.logger.warn(
        { err: error, kind: kind.name },
        `could not tell the other processes sharing the store that ${kind.label} ${quoteInput(legacyId)} was renamed: until their ID cache's entries expire (profile.json cache.ttlSeconds), a write they get addressed by its old ID reaches it`,
      );
    }
  }

  /**
   * Before a write trusts a cached resolution unread: drops the cache if another process sharing
   * the store renamed an entity since the last check (IdMapRepository.namesVersion). When the store
   * cannot say, or not within NAMES_VERSION_WAIT_MS (a store that hangs would otherwise hold every
   * such write for its statement timeout), nothing cached is trusted: the IDs are resolved by the
   * successor. Warned once until the store answers again.
   */
  async #syncNames(): Promise<void> {
    const cache = this.#cache;
    if (!cache) return;
    // A read that outlived its wait still holds a connection (PostgreSQL's, up to its statement
    // timeout): none is started beside it, or a locked table would take the whole pool, and with
    // it the logins and /readyz. Nothing cached is trusted meanwhile.
    if (cache.namesReadStuck) return this.#namesUnknown(cache, 'an earlier read has not answered yet');
    const reading = this.#deps.idMap.namesVersion();
    // A plain timer, cleared: an aborted `timers/promises` sleep costs an AbortError with its stack
    // (some 30 µs, on every write that trusts the cache).
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<typeof LATE>((resolve) => {
      timer = setTimeout(resolve, NAMES_VERSION_WAIT_MS, LATE);
    });
    try {
      const version = await Promise.race([reading, late]);
      if (version !== LATE) return cache.syncNames(version);
      cache.namesReadStuck = true;
      reading
        .catch(() => undefined)
        .finally(() => {
          cache.namesReadStuck = false;
        });
      this.#namesUnknown(cache, `no answer within ${NAMES_VERSION_WAIT_MS} ms`);
    } catch (error) {
      this.#namesUnknown(cache, error);
    } finally {
      clearTimeout(timer);
    }
  }

  #namesUnknown(cache: IdCache, why: unknown): void {
    if (!cache.namesUnknown()) return;
    this.#deps.logger.warn(
      typeof why === 'string' ? { reason: why } : { err: why },
      'could not read the names version from the store: the ID cache is dropped, and IDs a write would take from it are resolved by the successor until the store answers',
    );
  }

  /**
   * Drops a cached resolution (after a write that may have renamed, deleted or purged the entity).
   * With the writer's `ticket`: answers what `remember` takes as `own`, so the writer may cache what
   * its own calls answered (see IdCache.delete).
   */
  forget(kind: CompiledKind, legacyId: string, ticket?: number): number | undefined {
    return this.#cache?.delete(cacheKey(kind, legacyId), ticket);
  }

  /** Drops every cached resolution. */
  clear(): void {
    this.#cache?.clear();
  }

  /** The entity's own legacy ID. */
  async legacyIdOf(kind: CompiledKind, entity: Entity): Promise<string | null> {
    const [legacyId] = await this.toLegacy(kind, [entity]);
    return legacyId ?? null;
  }

  #attributes(kind: CompiledKind, want: readonly string[]): string {
    return this.#attributeValues.get(kind, want, () =>
      attributesValue(this.#deps.profile, [...new Set([...identityAttributes(kind), ...want])]),
    );
  }

  #readQuery(kind: CompiledKind): SuccessorQuery {
    const query: SuccessorQuery = {};
    for (const [param, template] of kind.readQuery) {
      query[param] = renderText(template, (path) =>
        path[0] === 'apiBase' ? this.#deps.apiBase : this.#deps.profile.settings[path[1] ?? ''],
      );
    }
    return query;
  }

  /** One filter query for natural IDs; answers the entities found, by legacy ID, and caches them. */
  async #naturalQuery(
    kind: CompiledKind,
    legacyIds: readonly string[],
    want: readonly string[],
  ): Promise<Map<string, Entity>> {
    const id = kind.id;
    if (id.strategy !== 'natural') throw new TypeError('natural query on a non-natural kind');
    const ticket = this.ticket();
    const name = encodedLength(id.filterMany);
    const items = await this.#chunked(
      legacyIds,
      // `name[]=value&` per ID (the array form); a lone ID goes in the single filter, never longer.
      (legacyId) => name + encodedLength(legacyId) + 2,
      (chunk) => {
        const single = chunk.length === 1 ? chunk[0] : undefined;
        return {
          ...this.#readQuery(kind),
          ...(single === undefined ? { [id.filterMany]: [...chunk] } : { [id.filter]: single }),
          [this.#deps.profile.attributesParam]: this.#attributes(kind, want),
        };
      },
      kind,
    );
    // Legacy IDs are exact strings: a successor whose filter matches case-insensitively (or by
    // prefix) may answer `ada.l` for `ADA.L`, which is not that ID. Only exact hits count, so such
    // an ID is unknown (404/400) and never cached under a spelling the entity does not have.
    const wanted = new Set(legacyIds);
    const out = new Map<string, Entity>();
    for (const item of items) {
      const value = stringAt(item, id.attribute);
      // An answer to a filter by the attribute that lacks it is broken, not "no such entity": a
      // 404 would tell the integration that the entity it asked for is gone.
      if (value === undefined)
        throw new UpstreamError(
          'bad_response',
          `the successor answered a read of ${kind.label} by ${id.filter} with one without "${id.attribute.join('.')}" (its legacy ID) as a text or number; check the successor's answers against the mapping profile's ID table`,
        );
      if (wanted.has(value)) out.set(value, item);
    }
    for (const [legacyId, entity] of out) {
      const uuid = this.#uuidOf(kind, entity);
      this.#cache?.set(cacheKey(kind, legacyId), uuid, ticket);
    }
    return out;
  }

  /** Which of these UUIDs exist: one read filtered by UUIDs. */
  async #existingUuids(kind: CompiledKind, uuids: readonly string[]): Promise<Set<string>> {
    if (uuids.length === 0) return new Set();
    return new Set((await this.#readByUuids(kind, uuids, NOTHING)).keys());
  }

  async #readByUuids(
    kind: CompiledKind,
    uuids: readonly string[],
    want: readonly string[],
    calls?: CallStats,
  ): Promise<Map<string, Entity>> {
    const separator = encodedLength(kind.uuidFilter.separator);
    const items = await this.#chunked(
      uuids,
      (uuid) => uuid.length + separator,
      (chunk) => ({
        ...this.#readQuery(kind),
        [kind.uuidFilter.param]: chunk.join(kind.uuidFilter.separator),
        [this.#deps.profile.attributesParam]: this.#attributes(kind, want),
      }),
      kind,
      calls,
    );
    const out = new Map<string, Entity>();
    for (const item of items) {
      const uuid = normalizeUuid(String(getPath(item, kind.uuidAttribute) ?? ''));
      if (uuid !== undefined) out.set(uuid, item);
    }
    return out;
  }

  /**
   * One collection read per chunk of IDs, run side by side: at most `maxIdsPerQuery` IDs, and at
   * most `maxIdBytesPerQuery` of their `bytes` (what each adds to the URL) unless one ID alone is
   * more. One read for any usual link body.
   */
  async #chunked(
    ids: readonly string[],
    bytes: (id: string) => number,
    query: (chunk: readonly string[]) => SuccessorQuery,
    kind: CompiledKind,
    calls?: CallStats,
  ): Promise<Entity[]> {
    const { maxIdsPerQuery, maxIdBytesPerQuery } = this.#deps.profile;
    const chunks: string[][] = [];
    let chunk: string[] = [];
    let used = 0;
    for (const id of ids) {
      const cost = bytes(id);
      if (chunk.length > 0 && (chunk.length === maxIdsPerQuery || used + cost > maxIdBytesPerQuery)) {
        chunks.push(chunk);
        chunk = [];
        used = 0;
      }
      chunk.push(id);
      used += cost;
    }
    if (chunk.length > 0) chunks.push(chunk);
    const pages = await Promise.all(
      chunks.map((chunk) =>
        this.#deps.successor.readCollection(kind.collection, {
          query: query(chunk),
          paging: this.#deps.profile.paging,
          identity: kind.uuidAttribute,
          calls,
          // The kind's collection is always there: its 404 is a wrong path, not an unknown ID.
          standing: true,
        }),
      ),
    );
    return pages.flat();
  }

  #uuidOf(kind: CompiledKind, entity: Entity): string {
    const uuid = normalizeUuid(String(getPath(entity, kind.uuidAttribute) ?? ''));
    if (uuid === undefined) {
      throw new UpstreamError(
        'bad_response',
        `a ${kind.label} in the successor's answer has no UUID in "${kind.uuidAttribute.join('.')}"; check uuidAttribute in entities.json`,
      );
    }
    return uuid;
  }
}

/** Length of `text` in a query string, encoded as the successor client sends it. */
function encodedLength(text: string): number {
  return formEncoded(text).length;
}

function cacheKey(kind: CompiledKind, legacyId: string): string {
  return `${kind.name}\u0000${legacyId}`;
}

function stringAt(value: unknown, path: readonly string[]): string | undefined {
  const found = getPath(value, path);
  if (typeof found === 'string') return found;
  if (typeof found === 'number') return String(found);
  return undefined;
}

/** The dashed UUID of a reference: an embedded object (its uuidAttribute), an IRI or a bare UUID. */
export function referenceUuid(kind: CompiledKind, ref: unknown): string | undefined {
  if (typeof ref === 'string') return iriToUuid(ref);
  if (ref !== null && typeof ref === 'object') {
    const direct = getPath(ref, kind.uuidAttribute);
    if (typeof direct === 'string') return normalizeUuid(direct);
    const iri = (ref as Record<string, unknown>)['@id'];
    if (typeof iri === 'string') return iriToUuid(iri);
  }
  return undefined;
}

function notFoundAsUndefined(error: unknown): undefined {
  if (error instanceof UpstreamError && error.code === 'not_found') return undefined;
  throw error;
}

/** Checks that a successor answer is one JSON object. */
export function asEntity(body: unknown, what: string): Entity {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new UpstreamError(
      'bad_response',
      `the successor answered ${what} with something that is not an entity object`,
    );
  }
  return body as Entity;
}
