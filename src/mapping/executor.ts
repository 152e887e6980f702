import { listSome, quoteInput, quoteList } from '../lib/quote.js';
import { normalizeUuid, uuidToBase58 } from '../lib/uuid.js';
import type { CallStats } from '../observe/observer.js';
import { countingCalls, type SuccessorClient, type SuccessorQuery } from '../successor/client.js';
import { mapPages, primed } from '../successor/collections.js';
import {
  asCreatedEntityError,
  asStandingCollectionError,
  mayHaveBeenApplied,
  publicUpstreamMessage,
  UpstreamError,
} from '../successor/errors.js';
import { iriToUuid } from '../successor/ids.js';
import { attributesFor, attributesValue, getPath, identityAttributes } from './attributes.js';
import type {
  CompiledKind,
  CompiledOperation,
  CompiledProfile,
  CompiledRequest,
  CompiledResource,
  CompiledStep,
} from './compile.js';
import { TranslationError } from './errors.js';
import {
  legacyViolations,
  type RenderedEntity,
  type RenderPlan,
  renderEntities,
  renderEntitiesJson,
  renderPlan,
  translateWrite,
  type UnusableFieldValue,
} from './fields.js';
import { asEntity, type Entity, type IdResolver, referenceUuid } from './ids.js';
import { PairMemo } from './memo.js';
import { renderJsonTemplate, renderTemplate, renderText, type VariableLookup } from './template.js';

/** Successor attributes to ask for (never changed once made) and their query parameter value. */
interface RenderAttributes {
  list: readonly string[];
  value: string;
}

/** What an executor works out once per profile, shared with its `counting` copies. */
interface ExecutorMemo {
  /** The attributes rendering a field list of a resource (of a kind without one: its identity). */
  attributes: PairMemo<CompiledResource | CompiledKind, readonly string[], RenderAttributes>;
  /** What the resolution of an operation's path entity reads, by the rendered attributes. */
  subjectWants: PairMemo<CompiledOperation, readonly string[], readonly string[]>;
  /** The same for a run that cannot roll back (see `mayRollBack`): without the linked items. */
  subjectWantsNoUndo: PairMemo<CompiledOperation, readonly string[], readonly string[]>;
  /** How a resource renders a field list, in a write's answer and in a read's (RenderPlan.strict). */
  renders: PairMemo<CompiledResource, readonly string[], RenderPlan>;
  strictRenders: PairMemo<CompiledResource, readonly string[], RenderPlan>;
}

function newExecutorMemo(): ExecutorMemo {
  return {
    attributes: new PairMemo(),
    subjectWants: new PairMemo(),
    subjectWantsNoUndo: new PairMemo(),
    renders: new PairMemo(),
    strictRenders: new PairMemo(),
  };
}

/** What a step's call gave: its answer, a collection read or its pages, or a tolerated refusal. */
interface SentStep {
  body?: unknown;
  /** Where the successor says the answered entity lives (see `SuccessorResponse.location`). */
  location?: string | undefined;
  collection?: Entity[];
  pages?: AsyncGenerator<Entity[], void>;
  tolerated?: boolean;
}

/** A read-only entity operation takes the entity from the resolution of its path entity itself. */
function answersFromResolution(op: CompiledOperation): boolean {
  return (
    op.result.type === 'entity' &&
    !op.steps.some((step) => step.write) &&
    !op.steps.some((step) => step.returnsEntity)
  );
}

/**
 * An operation that only reads its path entity and answers with it (`user.get`, `group.get`, …):
 * no steps (so no body is translated or sent), no link items, an entity result rendered through
 * a field table.
 */
function readsSubjectOnly(op: CompiledOperation): op is CompiledOperation & {
  subject: NonNullable<CompiledOperation['subject']>;
  resource: CompiledResource;
} {
  return (
    op.result.type === 'entity' &&
    op.steps.length === 0 &&
    op.subject !== undefined &&
    op.items === undefined &&
    op.resource !== undefined
  );
}

/**
 * The relation a link operation that may roll back reads before it writes, in the resolution read
 * of the path entity, so that a rollback undoes exactly what this call changed.
 */
function rollbackRelation(op: CompiledOperation): CompiledOperation['relation'] {
  return op.relation && op.items && op.steps.some((step) => step.undo) ? op.relation : undefined;
}

/**
 * Whether a run of `op` over `itemCount` distinct body items can fail after a write went through:
 * a request follows its first write (another item's, another step's, a read). Only then is there
 * anything to roll back, and the items linked before worth reading (an unlink of one group is its
 * DELETE and the read-back of the answer, whose failure rolls nothing back).
 */
function mayRollBack(op: CompiledOperation, itemCount: number): boolean {
  const first = op.steps.findIndex((step) => step.write);
  if (first === -1) return false;
  const step = op.steps[first];
  return first < op.steps.length - 1 || (step?.forEach === true && itemCount > 1);
}

const NO_FIELDS: readonly string[] = [];

/** The resolved IDs of a link body, and which of them the ID cache gave unread. */
interface ResolvedItems {
  refs: readonly Ref[];
  cached: ReadonlySet<string>;
}

const NO_ITEMS: ResolvedItems = { refs: [], cached: new Set() };

/**
 * A run's successor refused a UUID the ID cache gave unread (404, or 400/422 for an IRI in the body)
 * before anything was changed, or an unlink's tolerated 404 turned out to be for a body ID created
 * again under another UUID: the entity was purged behind the proxy's back, and its name may name
 * another one now. Caught by `#runCounted`, which runs the operation once more, resolving afresh.
 */
class StaleResolution extends Error {}

/** What a legacy handler hands to an operation: its validated input and the legacy fields it answers with. */
export interface RunInput {
  /** Path parameters (the subject's legacy ID among them). */
  params?: Readonly<Record<string, string>>;
  /** The validated legacy body: a JSON object, or for link operations the list of legacy IDs. */
  body?: unknown;
  /** Legacy fields to render for entity and collection results, `_id` included where wanted. */
  fields?: readonly string[];
  /**
   * A read-only collection result may come as `collection-pages`: rendered page by page while
   * the successor's pages arrive, so a list of any size takes bounded memory. The first page is
   * read and rendered before `run` resolves, so that its failures are the operation's.
   */
  stream?: boolean;
}

/** What an operation produced, in legacy shape. */
export type RunResult =
  | { type: 'none' }
  | { type: 'entity'; id: string | null; value: Record<string, unknown> }
  | { type: 'collection'; value: Record<string, unknown>[] }
  /** Each page as the JSON text of its legacy objects' array (see renderEntitiesJson). */
  | { type: 'collection-pages'; pages: AsyncGenerator<string, void> }
  | { type: 'object'; value: Record<string, unknown> };

interface Ref {
  uuid: string;
  id: string;
}

/** A write step that went through (for forEach steps: the items it was applied for). */
interface DoneStep {
  step: CompiledStep;
  items: Ref[];
}

/** What the calls of one run produced, for its answer. */
interface RunOutcome {
  /** The last step's answer body. */
  last: unknown;
  collection: Entity[] | undefined;
  collectionPages: AsyncGenerator<Entity[], void> | undefined;
  /** The entity to answer with, when a call brought it. */
  entity: Entity | undefined;
  subject: Ref | undefined;
  /** For the ID cache (see `IdResolver.ticket`). */
  ticket: number;
  /** The run's own forget of its subject, for the ID cache (see `IdResolver.forget`). */
  own: number | undefined;
  /** The legacy ID a write was addressed by, for the ID cache (see `IdResolver.remember`). */
  writtenAs: string | undefined;
  /** Whether the run told the processes sharing the store of its rename already (see `#run`). */
  renameAnnounced: boolean;
}

/** What the calls of one operation did before a successor failure, for the error and the rollback. */
interface PartialRun {
  op: CompiledOperation;
  steps: readonly CompiledStep[];
  skipped: ReadonlySet<CompiledStep>;
  items: readonly Ref[];
  itemIds: readonly string[];
  done: readonly DoneStep[];
  applied: readonly string[];
  pending: readonly string[];
  failedItem: Ref | undefined;
  /** The failed write's successor path named `failedItem` alone, and the successor had no such entity (404). */
  itemGone: boolean;
  /** The failed write got no answer (in time or at all): it may or may not have been applied. */
  outcomeUnknown: boolean;
  linkedBefore: ReadonlySet<string> | undefined;
  lookup: VariableLookup;
  /** What error messages call a write (the same text every time it is asked). */
  label: (request: CompiledRequest, item: Ref | undefined, lookup?: VariableLookup) => string;
}

type ItemState =
  | 'not applied'
  | 'failed'
  | 'gone'
  | 'unknown'
  | 'applied'
  | 'unchanged'
  | 'rolled back'
  | 'kept';

/**
 * Runs legacy operations as their operation tables say: resolve the path entity (404) and the
 * IDs of a link body (400, all before any write), run the successor requests, keep the ID cache
 * right, and map the answer back through the field table.
 */
export class OperationExecutor {
  constructor(
    private readonly profile: CompiledProfile,
    private readonly ids: IdResolver,
    private readonly successor: SuccessorClient,
    private readonly apiBase: string,
    /** Told about successor values a field's format cannot render (they render as null). */
    private readonly unusable?: UnusableFieldValue,
    /** Shared with the `counting` copies, so what it holds is worked out once per profile. */
    private readonly memo: ExecutorMemo = newExecutorMemo(),
  ) {}

  /** The same executor with every successor call adding to `calls` (one legacy request's counter). */
  counting(calls: CallStats): OperationExecutor {
    const successor = countingCalls(this.successor, calls);
    return new OperationExecutor(
      this.profile,
      this.ids.withSuccessor(successor),
      successor,
      this.apiBase,
      this.unusable,
      this.memo,
    );
  }

  /**
   * The successor attributes that render `fields` of `resource`, and their query value. Handlers
   * pass constant field lists, so each list is worked out once per profile, not per request.
   */
  #attributesOf(resource: CompiledResource, fields: readonly string[]): RenderAttributes {
    return this.memo.attributes.get(resource, fields, () => {
      // The render plan first (kept for the answer): a field the table cannot read fails here,
      // before any call, never after a write went through (a profile is checked against the
      // fields each operation answers with when it loads; this holds for any list a handler passes).
      this.#planOf(resource, fields, false);
      const list = attributesFor(resource, fields);
      return { list, value: attributesValue(this.profile, list) };
    });
  }

  /** The attributes of an operation without a field table: the kind's identity, worked out once. */
  #identityOf(kind: CompiledKind): RenderAttributes {
    return this.memo.attributes.get(kind, NO_FIELDS, () => {
      const list = identityAttributes(kind);
      return { list, value: attributesValue(this.profile, list) };
    });
  }

  /**
   * What the resolution of the path entity reads besides its identity (undefined: nothing): the
   * rendered attributes when the answer comes from it, the refusal attribute, the linked items
   * when the run may have to roll back (`undo`). Worked out once per operation and field list, like
   * the attributes themselves, and always the same array, so the resolver's attribute value for it
   * is worked out once too.
   */
  #subjectWant(
    op: CompiledOperation,
    renderAttributes: readonly string[],
    undo = true,
  ): readonly string[] | undefined {
    const memo = undo ? this.memo.subjectWants : this.memo.subjectWantsNoUndo;
    const want = memo.get(op, renderAttributes, () => {
      const refuseWhen = op.subject?.refuseWhen;
      const relation = undo ? rollbackRelation(op) : undefined;
      return [
        ...(answersFromResolution(op) ? renderAttributes : []),
        ...(refuseWhen ? [refuseWhen.attribute.join('.')] : []),
        ...(relation && op.items
          ? [`${relation.attribute.join('.')}.${op.items.uuidAttribute.join('.')}`]
          : []),
      ];
    });
    return want.length > 0 ? want : undefined;
  }

  /**
   * Runs one legacy operation by id (e.g. `user.get`); every successor call adds to `calls` when it
   * is given (the legacy request's counter).
   */
  run(operationId: string, input: RunInput, calls?: CallStats): Promise<RunResult> {
    const op = this.profile.operations.get(operationId);
    if (!op) {
      return Promise.reject(
        new TranslationError(
          'profile_error',
          `Operation ${operationId} has no entry in the operation tables of mapping profile ${this.profile.name}`,
        ),
      );
    }
    if (readsSubjectOnly(op)) {
      const legacyId = input.params?.[op.subject.param];
      const uuid = legacyId === undefined ? undefined : this.ids.peekCached(op.kind, legacyId);
      if (legacyId !== undefined && uuid !== undefined)
        return this.#readCachedSubject(op, legacyId, uuid, input, calls);
    }
    return this.#runCounted(op, input, calls);
  }

  /**
   * Reads the entity of `operationId`'s kind that has this successor UUID and renders `fields`
   * through the operation's field table (one successor call): what the entity is now, e.g. whether
   * the user an SSO token was issued for still has its username. Undefined when the successor has
   * no such entity (404); other failures reject like the client does.
   */
  async readByUuid(
    operationId: string,
    uuid: string,
    fields: readonly string[],
    calls?: CallStats,
  ): Promise<RenderedEntity | undefined> {
    const op = this.profile.operations.get(operationId);
    if (!op) {
      throw new TranslationError(
        'profile_error',
        `Operation ${operationId} has no entry in the operation tables of mapping profile ${this.profile.name}`,
      );
    }
    const { list } = this.#attributesOf(this.#resource(op), fields);
    const ticket = this.ids.ticket();
    let entity: Entity;
    try {
      entity = await this.ids.read(op.kind, uuid, list, calls);
    } catch (error) {
      if (error instanceof UpstreamError && error.code === 'not_found') return undefined;
      throw error;
    }
    this.ids.remember(op.kind, entity, ticket);
    // Not strict: the caller (SSO) tells a user without its name itself.
    const plan = this.#planOf(this.#resource(op), fields, false);
    const [rendered] = await renderEntities(plan, [entity], this.ids, calls);
    return rendered;
  }

  /**
   * A read of the path entity whose UUID the ID cache holds (the common GET of one user or group):
   * one successor call and the render, without the general run's set-up. An entity that is gone or
   * no longer has that legacy ID (renamed or purged behind the proxy's back) is forgotten by
   * `readCached` and resolved afresh by the general run, which counts that resolution as a miss.
   */
  async #readCachedSubject(
    op: CompiledOperation & {
      subject: NonNullable<CompiledOperation['subject']>;
      resource: CompiledResource;
    },
    legacyId: string,
    uuid: string,
    input: RunInput,
    calls: CallStats | undefined,
  ): Promise<RunResult> {
    const fields = input.fields ?? NO_FIELDS;
    const want = this.#subjectWant(op, this.#attributesOf(op.resource, fields).list) ?? NO_FIELDS;
    const ticket = this.ids.ticket();
    const entity = await this.ids.readCached(op.kind, legacyId, uuid, want, calls);
    if (entity === undefined) return this.#runCounted(op, input, calls);
    refuseIfMarked(op, entity);
    return this.#entityResult(op, entity, fields, ticket, undefined, calls);
  }

  /**
   * Renders the entity an operation answers with, and notes its legacy ID in the ID cache unless
   * it was forgotten after `ticket` (taken before the calls that brought the entity).
   */
  async #entityResult(
    op: CompiledOperation,
    entity: Entity,
    fields: readonly string[],
    ticket: number,
    own?: number,
    calls?: CallStats,
    writtenAs?: string,
    renameAnnounced = false,
  ): Promise<RunResult> {
    // A rename is told to the processes sharing the store before it is answered (see noteRename):
    // one the answer shows that the run did not ask for (a concurrent one, or the successor's own).
    if (
      this.ids.remember(op.kind, entity, ticket, own, writtenAs) &&
      writtenAs !== undefined &&
      !renameAnnounced
    )
      await this.ids.noteRename(op.kind, writtenAs);
    const [rendered] = await renderEntities(this.#plan(op, fields), [entity], this.ids, calls);
    if (!rendered) throw new TranslationError('profile_error', `Operation ${op.id} rendered nothing`);
    return { type: 'entity', id: rendered.id, value: rendered.value };
  }

  /**
   * The general run, its successor calls added to `calls` through a counting copy when given. A
   * run that found an ID from the cache gone before it changed anything (`StaleResolution`) runs
   * once more, resolving afresh: the name may have been created again since (another UUID).
   */
  #runCounted(op: CompiledOperation, input: RunInput, calls: CallStats | undefined): Promise<RunResult> {
    const runner = calls === undefined ? this : this.counting(calls);
    // Only a run that resolves IDs can find one stale (lists do not: no promise more for them).
    if (!op.subject && !op.items) return runner.#run(op, input, false);
    return runner.#run(op, input, true).catch((error: unknown) => {
      if (!(error instanceof StaleResolution)) throw error;
      return runner.#run(op, input, false);
    });
  }

  /**
   * The general run: resolutions, the steps with their rollback, and the result. `mayRetry`: a
   * successor 404 for a UUID the ID cache gave unread (a write trusts it), with nothing changed
   * yet, throws `StaleResolution` instead of the caller's 404 or 400 (see `#runCounted`).
   */
  async #run(op: CompiledOperation, input: RunInput, mayRetry: boolean): Promise<RunResult> {
    const fields = input.fields ?? NO_FIELDS;
    const { list: renderAttributes, value: attributesParam } = op.resource
      ? this.#attributesOf(op.resource, fields)
      : this.#identityOf(op.kind);
    const writes = op.steps.some((step) => step.write);
    const wantEntity = answersFromResolution(op);
    // Before any call: the entity answered is cached only if no write forgot its ID meanwhile
    // (the run's own forget below excepted, see `own`).
    const ticket = this.ids.ticket();
    let own: number | undefined;

    const written =
      op.usesFields && op.resource ? await translateWrite(op.resource, input.body, this.ids) : undefined;
    const legacyId = op.subject ? input.params?.[op.subject.param] : undefined;
    // A write that gives its subject another natural ID renames it: announced once it was or may
    // have been made (below), answered or not, so that no replica sharing the store goes on
    // trusting the old ID (IdResolver.noteRename).
    const renaming = legacyId !== undefined && renamesSubject(op.kind, written, legacyId);
    let failure: { error: unknown } | undefined;
    if (op.subject && legacyId === undefined) {
      throw new TranslationError(
        'profile_error',
        `Operation ${op.id} names path parameter ${op.subject.param}, which the route lacks`,
      );
    }
    const itemIds = op.items ? itemList(input.body) : [];
    const relation = mayRollBack(op, new Set(itemIds).size) ? rollbackRelation(op) : undefined;
    const subjectWant = this.#subjectWant(op, renderAttributes, relation !== undefined);
    // Both resolutions run at once; an unknown path entity (404) wins over unknown body IDs (400),
    // so both have settled before either is judged (without body IDs there is one to wait for).
    const subjectResolution =
      op.subject && legacyId !== undefined ? this.ids.resolveOne(op.kind, legacyId, subjectWant) : undefined;
    const itemsResolution =
      op.items && itemIds.length > 0 ? this.#resolveItems(op.items, itemIds) : undefined;
    if (itemsResolution) await Promise.allSettled([subjectResolution, itemsResolution]);
    const subject = await subjectResolution;
    if (op.subject && !subject) throw subjectNotFound(op, legacyId);
    if (subject?.entity) refuseIfMarked(op, subject.entity);
    const { refs: items, cached: itemsCached } = itemsResolution ? await itemsResolution : NO_ITEMS;
    /** Body IDs from the cache whose write got a tolerated 404 (see below the steps). */
    const toleratedCached: Ref[] = [];
    /** The run's cached body IDs forgotten, for the run once more that `StaleResolution` asks for. */
    const stale = (): StaleResolution => {
      if (op.items) for (const id of itemsCached) this.ids.forget(op.items, id);
      return new StaleResolution();
    };
    const staleSubject = mayRetry && subject?.cached === true;
    const state: { subject: Ref | undefined } = {
      subject: subject && legacyId !== undefined ? { uuid: subject.uuid, id: legacyId } : undefined,
    };
    const linkedBefore =
      relation && op.items && subject?.entity
        ? linkedUuids(op.items, getPath(subject.entity, relation.attribute))
        : undefined;

    let entity: Entity | undefined = wantEntity ? subject?.entity : undefined;
    let last: unknown;
    let collection: Entity[] | undefined;
    let collectionPages: AsyncGenerator<Entity[], void> | undefined;
    // Only the last step's collection can stream, and only when nothing is written.
    const streamStep =
      input.stream && op.result.type === 'collection' && !writes ? op.steps[op.steps.length - 1] : undefined;
    const lookupBase = this.#lookup(op, state, {
      items,
      body: input.body,
      params: input.params ?? {},
      fields: written,
      attributes: attributesParam,
    });
    // A link call with an empty list has nothing to write: it answers the entity as it is.
    const steps = op.items && items.length === 0 ? [] : op.steps;
    const applied: string[] = [];
    // Whether a write changed something: one the successor carried out, not one it refused in a way
    // the table tolerates (`not_found` of an unlink: not linked, or the path entity gone).
    let changed = false;
    const pending: string[] = [];
    const done: DoneStep[] = [];
    const skipped = new Set<CompiledStep>();
    let failedItem: Ref | undefined;
    let failedStep: CompiledStep | undefined;
    const label = this.#labels(op, lookupBase);
    try {
      for (const step of steps) {
        if (step.when && isEmpty(renderTemplate(step.when, lookupBase))) {
          skipped.add(step);
          continue;
        }
        const record: DoneStep = { step, items: [] };
        for (const item of step.forEach ? items : [undefined]) {
          const what = label(step, item);
          pending.push(what);
          failedItem = item;
          failedStep = step;
          const lookup: VariableLookup = (path) =>
            path[0] === 'item' && item ? this.#refVariable(op.items, item, path[1]) : lookupBase(path);
          // A write after this run created its entity (a create's grants): its 403 and 404 are not
          // the protected or unknown path entity's (asCreatedEntityError); a path that names a body
          // item alone is about that item (its 404: the item gone, below).
          const onCreated = step.write && !op.subject && state.subject !== undefined && !namesItemAlone(step);
          let outcome: SentStep;
          try {
            outcome = await this.#send(step, lookup, op.kind, step === streamStep);
          } catch (error) {
            throw onCreated ? asCreatedEntityError(error) : error;
          }
          pending.pop();
          failedItem = undefined;
          if (step.write) {
            applied.push(what);
            if (!done.includes(record)) done.push(record);
            if (item) record.items.push(item);
          }
          if (outcome.collection) collection = outcome.collection;
          if (outcome.pages) collectionPages = outcome.pages;
          if (outcome.tolerated) {
            if (item && itemsCached.has(item.id)) toleratedCached.push(item);
            continue;
          }
          if (step.write) changed = true;
          last = outcome.body;
          if (step.returnsEntity) {
            let body = outcome.body;
            if (body === undefined && step.write) {
              try {
                body = await this.#readBack(op, step, state.subject, outcome.location, renderAttributes);
              } catch (error) {
                // After the last write to run only the answer failed; before a later one, that one
                // was not sent (a partial failure, below), and the undo of this one needs the
                // created entity's UUID, which its location names.
                const later = steps.slice(steps.indexOf(step) + 1);
                if (later.every((next) => next.when && isEmpty(renderTemplate(next.when, lookupBase))))
                  throw unanswered(op, applied, error);
                const created = outcome.location === undefined ? undefined : iriToUuid(outcome.location);
                if (state.subject === undefined && created !== undefined)
                  state.subject = { uuid: created, id: created };
                throw error;
              }
            }
            entity = asEntity(body, `${step.method} ${step.path.source}`);
            // An entity created by this call is {entity.…} for the later steps (and their undo);
            // for a `table` kind its legacy ID is given in the store, after the write went through.
            try {
              state.subject ??= await this.#refOf(op.kind, entity);
            } catch (error) {
              if (!step.write || error instanceof UpstreamError) throw error;
              throw unanswered(op, applied, error);
            }
          } else if (step.write) entity = undefined;
        }
      }
    } catch (error) {
      failure = { error };
      // A 404 of a write whose successor path names a body item alone (e.g. `POST
      // /groups/{item.uuid}/privileges`) is that item's: removed since its ID was resolved. The
      // caller hears of an unknown body ID (400), not of an unknown path entity (404).
      const goneItem =
        error instanceof UpstreamError &&
        error.code === 'not_found' &&
        failedStep !== undefined &&
        namesItemAlone(failedStep)
          ? failedItem
          : undefined;
      if (goneItem && op.items) this.ids.forget(op.items, goneItem.id);
      else if (error instanceof UpstreamError && error.code === 'not_found' && legacyId !== undefined) {
        this.ids.forget(op.kind, legacyId);
        // The path entity is gone (purged, or deleted for good, since its UUID was cached or
        // mapped): the caller's 404, worded like every other unknown path entity.
        if (op.subject && applied.length === 0) {
          // The 404 may have been a cached body ID's, where the successor path names both.
          if (staleSubject) throw stale();
          throw subjectNotFound(op, legacyId);
        }
      }
      // A body ID whose cached UUID the successor no longer has, sent as an IRI in the request's
      // body, is refused as invalid (400/422): with nothing changed yet, the operation runs once
      // more with the body IDs resolved afresh (they may have been created again under another
      // UUID); a genuine refusal is then answered as before.
      if (
        mayRetry &&
        applied.length === 0 &&
        itemsCached.size > 0 &&
        error instanceof UpstreamError &&
        error.code === 'validation'
      )
        throw stale();
      if (goneItem && op.items && applied.length === 0) {
        if (mayRetry && itemsCached.has(goneItem.id)) throw stale();
        throw new TranslationError(
          'unknown_ids',
          `Unknown ${op.items.label} ID ${quoteInput(goneItem.id)}: the successor no longer has it; nothing was changed`,
          {
            problems: itemIds.flatMap((id, index) =>
              id === goneItem.id ? [{ path: `body.${index}`, message: ITEM_STATE_MESSAGES.gone }] : [],
            ),
          },
        );
      }
      if (error instanceof UpstreamError && applied.length > 0) {
        throw await this.#partialFailure(error, {
          op,
          steps,
          skipped,
          items,
          itemIds,
          done,
          applied,
          pending,
          failedItem,
          itemGone: goneItem !== undefined,
          outcomeUnknown: mayHaveBeenApplied(error),
          linkedBefore,
          lookup: lookupBase,
          label,
        });
      }
      throw error;
    } finally {
      // Own writes may rename, delete or purge the subject: its cached resolution is not trusted any more.
      if (writes && legacyId !== undefined) own = this.ids.forget(op.kind, legacyId, ticket);
      if (
        renaming &&
        legacyId !== undefined &&
        (failure === undefined ? changed : applied.length > 0 || !refusedForSure(failure.error))
      )
        await this.ids.noteRename(op.kind, legacyId);
    }

    // A body ID from the cache whose write the successor answered with a tolerated 404 (an unlink:
    // "not linked") may have been purged and created again under another UUID, linked still: its
    // ID is resolved afresh (one query), and if it names another entity now, the operation runs
    // once more with the fresh IDs (an unlink repeats harmlessly: what it removed is a 404 again).
    if (mayRetry && op.items && toleratedCached.length > 0) {
      const kind = op.items;
      for (const item of toleratedCached) this.ids.forget(kind, item.id);
      const { found } = await this.ids.resolveMany(
        kind,
        toleratedCached.map((item) => item.id),
      );
      if (toleratedCached.some((item) => (found.get(item.id) ?? item.uuid) !== item.uuid))
        throw new StaleResolution();
    }

    const produced: RunOutcome = {
      last,
      collection,
      collectionPages,
      entity,
      subject: state.subject,
      ticket,
      own,
      writtenAs: writes ? legacyId : undefined,
      renameAnnounced: renaming && changed,
    };
    if (!changed) {
      // Nothing was changed (no write, or only tolerated ones: an unlink of one item from a path
      // entity the successor no longer has answers its DELETE with a tolerated 404). A 404 of the
      // read for the answer is then the path entity's, not "gone right after the change".
      try {
        return await this.#answer(op, fields, renderAttributes, produced);
      } catch (error) {
        if (
          !(
            error instanceof UpstreamError &&
            error.code === 'not_found' &&
            op.subject &&
            legacyId !== undefined
          )
        )
          throw error;
        this.ids.forget(op.kind, legacyId);
        if (staleSubject) throw new StaleResolution();
        throw subjectNotFound(op, legacyId);
      }
    }
    try {
      return await this.#answer(op, fields, renderAttributes, produced);
    } catch (error) {
      throw unanswered(op, applied, error);
    }
  }

  /** The legacy answer of a run from what its calls produced. */
  async #answer(
    op: CompiledOperation,
    fields: readonly string[],
    renderAttributes: readonly string[],
    {
      last,
      collection,
      collectionPages,
      entity,
      subject,
      ticket,
      own,
      writtenAs,
      renameAnnounced,
    }: RunOutcome,
  ): Promise<RunResult> {
    switch (op.result.type) {
      case 'none':
        return { type: 'none' };
      case 'object': {
        const value: Record<string, unknown> = {};
        for (const [key, path] of Object.entries(op.result.fields)) {
          const found = getPath(last, path.split('.'));
          // A value the legacy answer can carry: a string, number or boolean (a temporary password),
          // never an object, list or null handed on as it came.
          if (typeof found !== 'string' && typeof found !== 'number' && typeof found !== 'boolean') {
            throw new UpstreamError(
              'bad_response',
              found === undefined
                ? `the successor's answer to ${op.id} lacks "${path}"`
                : `the successor's answer to ${op.id} has ${found === null ? 'null' : Array.isArray(found) ? 'a list' : 'an object'} for "${path}", not a value`,
            );
          }
          value[key] = found;
        }
        return { type: 'object', value };
      }
      case 'collection': {
        if (collectionPages) {
          const pages = renderPages(this.#plan(op, fields), collectionPages, this.ids);
          return { type: 'collection-pages', pages: await primed(pages) };
        }
        const rendered = await renderEntities(this.#plan(op, fields), collection ?? [], this.ids);
        return { type: 'collection', value: rendered.map((r) => r.value) };
      }
      case 'entity': {
        // A kind without a field table is refused before its entity is read.
        this.#resource(op);
        let answered = entity;
        if (!answered) {
          const uuid = subject?.uuid;
          if (uuid === undefined)
            throw new TranslationError('profile_error', `Operation ${op.id} has no entity to answer with`);
          answered = await this.ids.read(op.kind, uuid, renderAttributes);
        }
        return this.#entityResult(op, answered, fields, ticket, own, undefined, writtenAs, renameAnnounced);
      }
    }
  }

  #resource(op: CompiledOperation): CompiledResource {
    if (!op.resource) throw new TranslationError('profile_error', `Kind ${op.kind.name} has no field table`);
    return op.resource;
  }

  /** How the operation's resource renders `fields`, worked out once per field list. */
  #plan(op: CompiledOperation, fields: readonly string[]): RenderPlan {
    // A read's answer is strict (see RenderPlan.strict); a write's is not.
    return this.#planOf(this.#resource(op), fields, op.steps.every(isRead));
  }

  #planOf(resource: CompiledResource, fields: readonly string[], strict: boolean): RenderPlan {
    const memo = strict ? this.memo.strictRenders : this.memo.renders;
    return memo.get(resource, fields, () => renderPlan(resource, fields, this.unusable, strict));
  }

  /**
   * Resolves every ID of a link body (one call); any unknown one is a 400 listing all of them.
   * `cached`: the IDs whose UUIDs the ID cache gave unread.
   */
  async #resolveItems(kind: CompiledKind, legacyIds: readonly string[]): Promise<ResolvedItems> {
    const unique = [...new Set(legacyIds)];
    const { found, missing, cached } = await this.ids.resolveMany(kind, unique);
    if (missing.length > 0) {
      const unknown = new Set(missing);
      throw new TranslationError(
        'unknown_ids',
        `Unknown ${kind.label} ID${missing.length === 1 ? '' : 's'}: ${quoteList(missing)}; nothing was changed`,
        {
          problems: legacyIds.flatMap((id, index) =>
            unknown.has(id)
              ? [{ path: `body.${index}`, message: `no ${kind.label} with ID ${quoteInput(id)}` }]
              : [],
          ),
        },
      );
    }
    return { refs: unique.map((id) => ({ id, uuid: found.get(id) ?? '' })), cached };
  }

  /** The UUID and legacy ID of an entity a step returned (the one the operation created). */
  async #refOf(kind: CompiledKind, entity: Entity): Promise<Ref | undefined> {
    const uuid = normalizeUuid(String(getPath(entity, kind.uuidAttribute) ?? ''));
    if (uuid === undefined) return undefined;
    return { uuid, id: (await this.ids.legacyIdOf(kind, entity)) ?? uuid };
  }

  /**
   * The `partial_failure` for a successor failure after some writes of the call went through: it says
   * which writes (and body IDs) were applied, which not, and — when the successor did not answer
   * in time — which one has an unknown outcome; and it undoes the applied ones where the operation
   * table says how (`undo`), reporting whether that worked.
   */
  async #partialFailure(error: UpstreamError, run: PartialRun): Promise<TranslationError> {
    const { op, items, label } = run;
    const notRun = run.steps.flatMap((step) =>
      step.write && !run.skipped.has(step)
        ? step.forEach
          ? items.map((item) => label(step, item))
          : [label(step, undefined)]
        : [],
    );
    // The write that failed: without an answer, nobody knows whether the successor did it.
    const unknown = run.outcomeUnknown ? run.pending : [];
    const notApplied = [
      ...new Set([
        ...(run.outcomeUnknown ? [] : run.pending),
        ...notRun.filter((what) => !run.applied.includes(what) && !unknown.includes(what)),
      ]),
    ];

    const states = new Map<string, ItemState>(items.map((item) => [item.id, 'not applied']));
    for (const { step, items: done } of run.done)
      for (const item of step.forEach ? done : items) states.set(item.id, 'applied');
    if (run.failedItem)
      states.set(run.failedItem.id, run.outcomeUnknown ? 'unknown' : run.itemGone ? 'gone' : 'failed');

    const rollback = await this.#rollback(run, states);
    const undoneText = rollback.undone.length > 0 ? `; undone: ${listSome(rollback.undone)}` : '';
    let outcome: string;
    if (rollback.failed !== undefined) {
      outcome = `Rollback failed (${rollback.failed}): still applied: ${listSome(rollback.kept)}${undoneText}`;
    } else if (rollback.kept.length > 0) {
      outcome = `Not rolled back (the mapping has no undo for it): still applied: ${listSome(rollback.kept)}${undoneText}`;
    } else if (rollback.undone.length > 0) {
      outcome = `Rolled back (${listSome(rollback.undone)})${unknown.length > 0 ? '' : ': the state is as before the call'}`;
    } else {
      outcome = `Nothing to roll back: the applied writes changed nothing${
        unknown.length > 0 ? '' : ', the state is as before the call'
      }`;
    }
    if (unknown.length > 0)
      outcome += `; the outcome of ${listSome(unknown)} is unknown (no answer): it may be in effect, check it`;

    const itemErrors = op.items
      ? run.itemIds.map((id, index) => ({
          path: `body.${index}`,
          message: ITEM_STATE_MESSAGES[states.get(id) ?? 'not applied'],
        }))
      : [];
    return new TranslationError(
      'partial_failure',
      `Partly applied: ${listSome(run.applied)}; ${
        unknown.length > 0 ? `outcome unknown: ${listSome(unknown)}; ` : ''
      }not applied: ${listSome(notApplied) || 'nothing'}. ${outcome}.`,
      {
        problems: itemErrors,
        upstream: error,
        applied: [...run.applied],
        notApplied,
        unknown: [...unknown],
        ...optional('violations', legacyViolations(op, error)),
        ...optional('goneItem', run.itemGone ? run.failedItem?.id : undefined),
        ...optional('rollbackFailure', rollback.failure),
      },
    );
  }

  /**
   * Undoes the applied writes of a failed call, last first, as their `undo` requests say. Only
   * what the call changed is undone (with `relation`: items that were not linked before an add,
   * or were linked before a removal). Stops at the first undo that fails.
   */
  async #rollback(
    run: PartialRun,
    states: Map<string, ItemState>,
  ): Promise<{ undone: string[]; kept: string[]; failed?: string; failure?: UpstreamError }> {
    const { op, items, linkedBefore, label } = run;
    const undone: string[] = [];
    const kept: string[] = [];
    let failed: string | undefined;
    let failure: UpstreamError | undefined;
    for (const { step, items: stepItems } of [...run.done].reverse()) {
      const candidates = step.forEach ? stepItems : items;
      const changed =
        op.relation && linkedBefore
          ? candidates.filter((item) => linkedBefore.has(item.uuid) === (op.relation?.change === 'remove'))
          : candidates;
      for (const item of candidates) if (!changed.includes(item)) states.set(item.id, 'unchanged');
      if (op.items && changed.length === 0) continue;
      const keep = () => {
        if (op.items) {
          for (const item of changed) states.set(item.id, 'kept');
          kept.push(...changed.map((item) => label(step, step.forEach ? item : undefined)));
        } else kept.push(label(step, undefined));
      };
      const undo = step.undo;
      if (!undo || failed !== undefined) {
        keep();
        continue;
      }
      const lookup: VariableLookup = (path) =>
        path[0] === 'applied'
          ? changed.map((item) => this.#refVariable(op.items, item, path[1]))
          : run.lookup(path);
      const pendingItems = [...changed];
      try {
        if (undo.forEach) {
          for (const item of changed) {
            await this.#send(undo, (path) =>
              path[0] === 'item' ? this.#refVariable(op.items, item, path[1]) : lookup(path),
            );
            pendingItems.shift();
            states.set(item.id, 'rolled back');
            undone.push(label(undo, item, lookup));
          }
        } else {
          await this.#send(undo, lookup);
          for (const item of changed) states.set(item.id, 'rolled back');
          pendingItems.length = 0;
          undone.push(
            op.items && !undo.describe
              ? (this.#relationLabel(op, undo, lookup, quoteList(changed.map((item) => item.id))) ??
                  `${undo.method} ${op.items.label} ${quoteList(changed.map((item) => item.id))}`)
              : label(undo, undefined, lookup),
          );
        }
      } catch (caught) {
        // The undo of a create's writes is on the entity it created (asCreatedEntityError).
        const error = op.subject ? caught : asCreatedEntityError(caught);
        if (!(error instanceof UpstreamError)) throw error;
        failed = publicUpstreamMessage(error);
        failure = error;
        if (op.items) {
          for (const item of pendingItems) states.set(item.id, 'kept');
          kept.push(...pendingItems.map((item) => label(step, step.forEach ? item : undefined)));
        } else kept.push(label(step, undefined));
      }
    }
    return failed === undefined
      ? { undone, kept }
      : { undone, kept, failed, ...(failure ? { failure } : {}) };
  }

  /**
   * What error messages call the writes of one call: the request's `describe` template when the
   * table has one (e.g. "grant privileges {body.privileges} to role {entity.id}"), else the
   * method with the item's or the entity's kind and legacy ID. Each label is rendered once, so
   * the same write reads the same in every part of a message.
   */
  #labels(
    op: CompiledOperation,
    base: VariableLookup,
  ): (request: CompiledRequest, item: Ref | undefined, lookup?: VariableLookup) => string {
    const seen = new Map<CompiledRequest, Map<string | undefined, string>>();
    return (request, item, lookup = base) => {
      const known = seen.get(request)?.get(item?.id);
      if (known !== undefined) return known;
      let text: string;
      const vars: VariableLookup = (path) =>
        path[0] === 'item' && item ? this.#refVariable(op.items, item, path[1]) : lookup(path);
      if (request.describe) text = renderText(request.describe, vars);
      else if (item)
        text =
          this.#relationLabel(op, request, vars, quoteInput(item.id)) ??
          `${request.method} ${op.items?.label ?? 'item'} ${quoteInput(item.id)}`;
      else {
        const id = vars(['entity', 'id']);
        text = `${request.method} ${op.kind.label}${typeof id === 'string' && id !== '' ? ` ${quoteInput(id)}` : ''}`;
      }
      const byItem = seen.get(request) ?? new Map<string | undefined, string>();
      byItem.set(item?.id, text);
      seen.set(request, byItem);
      return text;
    };
  }

  /**
   * How messages name a write of the operation's `relation` by default: what it does to the link,
   * not the HTTP method, which read as the item's own deletion (`DELETE group "lehrer"` was a
   * membership removed): `remove group "lehrer" from user "jonas.schmidt"`, its undo `add group
   * "lehrer" back to user "jonas.schmidt"`. `items` is the item IDs as quoted; undefined for an
   * operation without a relation.
   */
  #relationLabel(
    op: CompiledOperation,
    request: CompiledRequest,
    vars: VariableLookup,
    items: string,
  ): string | undefined {
    if (!op.relation || !op.items) return undefined;
    const undo = op.steps.some((step) => step.undo === request);
    const id = vars(['entity', 'id']);
    const entity = `${op.kind.label}${typeof id === 'string' && id !== '' ? ` ${quoteInput(id)}` : ''}`;
    return (op.relation.change === 'add') !== undo
      ? `add ${op.items.label} ${items} ${undo ? 'back ' : ''}to ${entity}`
      : `remove ${op.items.label} ${items} ${undo ? 'again ' : ''}from ${entity}`;
  }

  async #send(
    step: CompiledRequest & { collection?: boolean },
    lookup: VariableLookup,
    kind?: CompiledKind,
    stream = false,
  ): Promise<SentStep> {
    const path = renderText(step.path, lookup, encodeURIComponent);
    const query: SuccessorQuery = {};
    for (const [param, template] of step.query) {
      const value = renderTemplate(template, lookup);
      query[param] = Array.isArray(value)
        ? value.map(String)
        : value === undefined || value === null
          ? undefined
          : String(value);
    }
    if (step.collection && stream) {
      return {
        pages: this.successor.streamCollection(path, {
          query,
          paging: this.profile.paging,
          ...(kind === undefined ? {} : { identity: kind.uuidAttribute }),
          standing: namesNoEntity(step),
        }) as AsyncGenerator<Entity[], void>,
      };
    }
    if (step.collection) {
      return {
        collection: await this.successor.readCollection(path, {
          query,
          paging: this.profile.paging,
          ...(kind === undefined ? {} : { identity: kind.uuidAttribute }),
          standing: namesNoEntity(step),
        }),
      };
    }
    try {
      const response = await this.successor.request({
        method: step.method,
        path,
        query,
        ...(step.body === undefined ? {} : { body: renderJsonTemplate(step.body, lookup) }),
        contentType: step.contentType,
      });
      return { body: response.body, location: response.location };
    } catch (error) {
      if (error instanceof UpstreamError && (step.tolerate as ReadonlySet<string>).has(error.code)) {
        return { tolerated: true };
      }
      // A write to a kind's collection that answers 404 (no entity is gone: the path is wrong), or
      // a create there 403 (no entity is protected: the proxy's client lacks a permission).
      const create = 'returnsEntity' in step && step.returnsEntity === true;
      throw namesNoEntity(step) ? asStandingCollectionError(error, create) : error;
    }
  }

  /**
   * The entity a write that `returns` it answered without a body (201 with only a `Location`, 204,
   * or an empty 200: all legal, and the write went through): read back by its UUID, the path
   * entity's when the operation has one (every later step's answer is about it), else the one the
   * answer's location names (a create). Undefined body and no UUID to read: a `bad_response`.
   */
  async #readBack(
    op: CompiledOperation,
    step: CompiledStep,
    subject: Ref | undefined,
    location: string | undefined,
    attributes: readonly string[],
  ): Promise<unknown> {
    const uuid = subject?.uuid ?? (location === undefined ? undefined : iriToUuid(location));
    if (uuid === undefined) {
      throw new UpstreamError(
        'bad_response',
        `the successor answered ${step.method} ${step.path.source} (${op.id}) without a body and without a Location naming the ${op.kind.label}, so it cannot be read back`,
        { source: 'api', method: step.method },
      );
    }
    return this.ids.read(op.kind, uuid, attributes);
  }

  #lookup(
    op: CompiledOperation,
    state: { readonly subject: Ref | undefined },
    vars: {
      items: readonly Ref[];
      body: unknown;
      params: Readonly<Record<string, string>>;
      fields: Record<string, unknown> | undefined;
      attributes: string;
    },
  ): VariableLookup {
    return (path) => {
      const [root, sub] = path;
      switch (root) {
        case 'apiBase':
          return this.apiBase;
        case 'settings':
          return this.profile.settings[sub ?? ''];
        case 'entity':
          return state.subject ? this.#refVariable(op.kind, state.subject, sub) : undefined;
        case 'items':
          return vars.items.map((item) => this.#refVariable(op.items, item, sub));
        case 'body':
          return getPath(vars.body, [sub ?? '']);
        case 'params':
          return vars.params[sub ?? ''];
        case 'fields':
          return path.length === 1 ? (vars.fields ?? {}) : getPath(vars.fields ?? {}, path.slice(1));
        case 'attributes':
          return vars.attributes;
        default:
          return undefined;
      }
    };
  }

  #refVariable(kind: CompiledKind | undefined, ref: Ref, sub: string | undefined): string | undefined {
    switch (sub) {
      case 'uuid':
        return ref.uuid;
      case 'uuid58':
        return uuidToBase58(ref.uuid);
      case 'iri':
        return kind ? this.ids.iri(kind, ref.uuid) : undefined;
      case 'id':
        return ref.id;
      default:
        return undefined;
    }
  }
}

function itemList(body: unknown): string[] {
  if (!Array.isArray(body) || body.some((id) => typeof id !== 'string')) {
    throw new TranslationError('invalid_input', 'The request body must be a JSON array of ID strings', {
      problems: [{ path: 'body', message: 'expected an array of strings' }],
    });
  }
  return body as string[];
}

/**
 * The writes of a call went through, then its answer failed (`cause`): the change is in effect,
 * and a caller told only "failed" might repeat it.
 */
function unanswered(op: CompiledOperation, applied: readonly string[], cause: unknown): TranslationError {
  return new TranslationError(
    'unanswered',
    `The change went through (${listSome(applied)}); only its answer failed: read the ${op.kind.label} back instead of repeating the call`,
    { applied: [...applied], cause },
  );
}

/** The 404 of an unknown path entity. */
function subjectNotFound(op: CompiledOperation, legacyId: string | undefined): TranslationError {
  return new TranslationError('not_found', `No ${op.kind.label} with ID ${quoteInput(legacyId ?? '')}`);
}

/** Refuses (403) an operation whose path entity has its `refuseWhen` attribute set. */
function refuseIfMarked(op: CompiledOperation, entity: Entity): void {
  const refuseWhen = op.subject?.refuseWhen;
  if (!refuseWhen) return;
  const state = getPath(entity, refuseWhen.attribute);
  if (!isEmpty(state) && state !== false) throw new TranslationError('refused', refuseWhen.message);
}

/** Whether a `when` condition says "nothing": missing, null, "" or an empty list. */
function isEmpty(value: unknown): boolean {
  return (
    value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)
  );
}

/**
 * The UUIDs of the references in a relation attribute (embedded objects, IRIs or UUIDs);
 * undefined when the successor did not send the attribute (a rollback then undoes every applied item).
 */
function linkedUuids(kind: CompiledKind, value: unknown): Set<string> | undefined {
  if (!Array.isArray(value)) return undefined;
  const out = new Set<string>();
  for (const ref of value) {
    const uuid = referenceUuid(kind, ref);
    if (uuid !== undefined) out.add(uuid);
  }
  return out;
}

/**
 * Whether a step's path names no entity (no `{entity.…}`, `{item.…}`, `{params.…}`, only fixed
 * text and settings): a kind's collection, which is there whatever entities exist, so that its
 * 404 is a wrong path rather than an entity gone.
 */
function namesNoEntity(step: CompiledRequest): boolean {
  return step.path.parts.every(
    (part) => typeof part === 'string' || part.path[0] === 'settings' || part.path[0] === 'apiBase',
  );
}

/**
 * Whether a 404 answered to `step` is about its body item: its successor path names the item and
 * not the path entity (whose 404 it would be where the path names both).
 */
function namesItemAlone(step: CompiledRequest): boolean {
  const roots = step.path.parts.flatMap((part) => (typeof part === 'string' ? [] : [part.path[0]]));
  return roots.includes('item') && !roots.includes('entity') && !roots.includes('params');
}

/** What the `errors` of a partly applied link call say about each body ID. */
const ITEM_STATE_MESSAGES: Record<ItemState, string> = {
  'not applied': 'not applied',
  failed: 'not applied: the successor failed on this one',
  gone: 'not applied: the successor no longer has it (removed since the call began)',
  unknown:
    'outcome unknown: the successor did not answer, so this one may or may not be in effect (not rolled back)',
  applied: 'applied',
  unchanged: 'applied without a change (it already was as asked): nothing to roll back',
  'rolled back': 'applied, then rolled back',
  kept: 'applied and not rolled back: still in effect',
};

/** Whether a step only reads. */
function isRead(step: CompiledStep): boolean {
  return step.method === 'GET';
}

/** `{[key]: value}` when the value is defined, else nothing (for optional properties under exactOptionalPropertyTypes). */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** Renders a collection page by page, as JSON text (references are translated in one batch per page). */
function renderPages(
  plan: RenderPlan,
  pages: AsyncGenerator<Entity[], void>,
  ids: IdResolver,
): AsyncGenerator<string, void> {
  return mapPages(pages, (page) => renderEntitiesJson(plan, page, ids));
}

/** Whether a write's successor fields (`written`) give the subject, addressed by `legacyId`, another natural ID. */
function renamesSubject(
  kind: CompiledKind,
  written: Record<string, unknown> | undefined,
  legacyId: string,
): boolean {
  if (kind.id.strategy !== 'natural' || written === undefined) return false;
  const value = getPath(written, kind.id.attribute);
  return (typeof value === 'string' || typeof value === 'number') && String(value) !== legacyId;
}

/**
 * Whether a failed write's error shows the successor refused it (a 4xx of the API: nothing was
 * changed), for announcing a rename: anything else may have come after the write was made (a
 * gateway's 502 or 504 in front of the successor, a lost answer, a failure after it), and an
 * announcement too many only has the other replicas resolve their IDs afresh.
 */
function refusedForSure(error: unknown): boolean {
  if (!(error instanceof UpstreamError) || error.details.source !== 'api' || mayHaveBeenApplied(error))
    return false;
  const status = error.details.status;
  return status !== undefined && status >= 400 && status < 500;
}
