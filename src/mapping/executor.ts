import { upstreamToLegacy } from '../http/errors.js';
import { LegacyError } from '../legacy/errors.js';
import type { SuccessorClient, SuccessorQuery } from '../successor/client.js';
import { UpstreamError } from '../successor/errors.js';
import { uuidToBase58 } from '../uuid.js';
import { attributesFor, attributesValue, getPath, identityAttributes } from './attributes.js';
import type { CompiledKind, CompiledOperation, CompiledProfile, CompiledStep } from './compile.js';
import { renderEntities, translateWrite } from './fields.js';
import { asEntity, type Entity, type IdResolver } from './ids.js';
import { renderJsonTemplate, renderTemplate, renderText, type VariableLookup } from './template.js';

/** What a legacy handler hands to an operation: its validated input and the legacy fields it answers with. */
export interface RunInput {
  /** Path parameters (the subject's legacy ID among them). */
  params?: Readonly<Record<string, string>>;
  /** The validated legacy body: a JSON object, or for link operations the list of legacy IDs. */
  body?: unknown;
  /** Legacy fields to render for entity and collection results, `_id` included where wanted. */
  fields?: readonly string[];
}

/** What an operation produced, in legacy shape. */
export type RunResult =
  | { type: 'none' }
  | { type: 'entity'; id: string | null; value: Record<string, unknown> }
  | { type: 'collection'; value: Record<string, unknown>[] }
  | { type: 'object'; value: Record<string, unknown> };

interface Ref {
  uuid: string;
  id: string;
}

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
  ) {}

  /** Runs one legacy operation by id (e.g. `user.get`). */
  async run(operationId: string, input: RunInput): Promise<RunResult> {
    const op = this.profile.operations.get(operationId);
    if (!op) {
      throw new LegacyError(
        500,
        `Operation ${operationId} has no entry in the operation tables of mapping profile ${this.profile.name}`,
      );
    }
    const fields = input.fields ?? [];
    const renderAttributes = op.resource ? attributesFor(op.resource, fields) : identityAttributes(op.kind);
    const writes = op.steps.some((step) => step.write);
    const answered = op.steps.some((step) => step.returnsEntity);
    // A read-only entity operation takes the entity from the resolution itself when it can.
    const wantEntity = op.result.type === 'entity' && !writes && !answered;

    const written =
      op.usesFields && op.resource ? await translateWrite(op.resource, input.body, this.ids) : undefined;
    const legacyId = op.subject ? input.params?.[op.subject.param] : undefined;
    if (op.subject && legacyId === undefined) {
      throw new LegacyError(
        500,
        `Operation ${op.id} names path parameter ${op.subject.param}, which the route lacks`,
      );
    }
    const itemIds = op.items ? itemList(input.body) : [];
    // Both resolutions run at once; an unknown path entity (404) wins over unknown body IDs (400).
    const [subjectOutcome, itemsOutcome] = await Promise.allSettled([
      op.subject && legacyId !== undefined
        ? this.ids.resolveOne(op.kind, legacyId, wantEntity ? renderAttributes : undefined)
        : undefined,
      op.items ? this.#resolveItems(op.items, itemIds) : [],
    ]);
    if (subjectOutcome.status === 'rejected') throw subjectOutcome.reason;
    const subject = subjectOutcome.value;
    if (op.subject && !subject) {
      throw new LegacyError(404, `No ${op.kind.label} with ID "${legacyId ?? ''}"`);
    }
    if (itemsOutcome.status === 'rejected') throw itemsOutcome.reason;
    const items = itemsOutcome.value;
    const subjectRef: Ref | undefined =
      subject && legacyId !== undefined ? { uuid: subject.uuid, id: legacyId } : undefined;

    let entity: Entity | undefined = wantEntity ? subject?.entity : undefined;
    let last: unknown;
    let collection: Entity[] | undefined;
    const lookupBase = this.#lookup(op, {
      subject: subjectRef,
      items,
      body: input.body,
      params: input.params ?? {},
      fields: written,
      attributes: attributesValue(this.profile, renderAttributes),
    });
    // A link call with an empty list has nothing to write: it answers the entity as it is.
    const steps = op.items && items.length === 0 ? [] : op.steps;
    const applied: string[] = [];
    const pending: string[] = [];
    try {
      for (const step of steps) {
        for (const item of step.forEach ? items : [undefined]) {
          const what = describeWrite(step, item, op.items);
          pending.push(what);
          const lookup: VariableLookup = (path) =>
            path[0] === 'item' && item ? this.#refVariable(op.items, item, path[1]) : lookupBase(path);
          const outcome = await this.#send(step, lookup);
          pending.pop();
          if (step.write) applied.push(what);
          if (outcome.collection) collection = outcome.collection;
          if (outcome.tolerated) continue;
          last = outcome.body;
          if (step.returnsEntity) entity = asEntity(outcome.body, `${step.method} ${step.path.source}`);
          else if (step.write) entity = undefined;
        }
      }
    } catch (error) {
      if (error instanceof UpstreamError && error.code === 'not_found' && legacyId !== undefined)
        this.ids.forget(op.kind, legacyId);
      if (error instanceof UpstreamError && applied.length > 0)
        throw partialFailure(error, applied, pending, steps, items, op.items);
      throw error;
    } finally {
      // Own writes may rename, delete or purge the subject: its cached resolution is not trusted any more.
      if (writes && legacyId !== undefined) this.ids.forget(op.kind, legacyId);
    }

    switch (op.result.type) {
      case 'none':
        return { type: 'none' };
      case 'object': {
        const value: Record<string, unknown> = {};
        for (const [key, path] of Object.entries(op.result.fields)) {
          const found = getPath(last, path.split('.'));
          if (found === undefined) {
            throw new UpstreamError('bad_response', `the successor's answer to ${op.id} lacks "${path}"`);
          }
          value[key] = found;
        }
        return { type: 'object', value };
      }
      case 'collection': {
        const resource = this.#resource(op);
        const rendered = await renderEntities(resource, collection ?? [], fields, this.ids);
        return { type: 'collection', value: rendered.map((r) => r.value) };
      }
      case 'entity': {
        const resource = this.#resource(op);
        if (!entity) {
          if (!subject) throw new LegacyError(500, `Operation ${op.id} has no entity to answer with`);
          entity = await this.ids.read(op.kind, subject.uuid, renderAttributes);
        }
        this.ids.remember(op.kind, entity);
        const [rendered] = await renderEntities(resource, [entity], fields, this.ids);
        if (!rendered) throw new LegacyError(500, `Operation ${op.id} rendered nothing`);
        return { type: 'entity', id: rendered.id, value: rendered.value };
      }
    }
  }

  #resource(op: CompiledOperation) {
    if (!op.resource) throw new LegacyError(500, `Kind ${op.kind.name} has no field table`);
    return op.resource;
  }

  /** Resolves every ID of a link body (one call); any unknown one is a 400 listing all of them. */
  async #resolveItems(kind: CompiledKind, legacyIds: readonly string[]): Promise<Ref[]> {
    const unique = [...new Set(legacyIds)];
    const { found, missing } = await this.ids.resolveMany(kind, unique);
    if (missing.length > 0) {
      const unknown = new Set(missing);
      throw new LegacyError(
        400,
        `Unknown ${kind.label} ID${missing.length === 1 ? '' : 's'}: ${missing.map((id) => JSON.stringify(id)).join(', ')}; nothing was changed`,
        legacyIds.flatMap((id, index) =>
          unknown.has(id) ? [{ path: `body.${index}`, message: `no ${kind.label} with ID "${id}"` }] : [],
        ),
      );
    }
    return unique.map((id) => ({ id, uuid: found.get(id) ?? '' }));
  }

  async #send(
    step: CompiledStep,
    lookup: VariableLookup,
  ): Promise<{ body?: unknown; collection?: Entity[]; tolerated?: boolean }> {
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
    if (step.collection) {
      return { collection: await this.successor.readCollection(path, { query }) };
    }
    try {
      const response = await this.successor.request({
        method: step.method,
        path,
        query,
        ...(step.body === undefined ? {} : { body: renderJsonTemplate(step.body, lookup) }),
        contentType: step.contentType,
      });
      return { body: response.body };
    } catch (error) {
      if (error instanceof UpstreamError && (step.tolerate as ReadonlySet<string>).has(error.code)) {
        return { tolerated: true };
      }
      throw error;
    }
  }

  #lookup(
    op: CompiledOperation,
    vars: {
      subject: Ref | undefined;
      items: Ref[];
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
          return vars.subject ? this.#refVariable(op.kind, vars.subject, sub) : undefined;
        case 'items':
          return vars.items.map((item) => this.#refVariable(op.items, item, sub));
        case 'body':
          return getPath(vars.body, [sub ?? '']);
        case 'params':
          return vars.params[sub ?? ''];
        case 'fields':
          return vars.fields ?? {};
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
    throw new LegacyError(400, 'The request body must be a JSON array of ID strings', [
      { path: 'body', message: 'expected an array of strings' },
    ]);
  }
  return body as string[];
}

function describeWrite(step: CompiledStep, item: Ref | undefined, kind: CompiledKind | undefined): string {
  return item ? `${step.method} ${kind?.label ?? 'item'} "${item.id}"` : `${step.method} ${step.path.source}`;
}

/**
 * A successor failure after some writes went through: the legacy error says which writes were
 * applied and which were not, so nothing is silently half-done.
 */
function partialFailure(
  error: UpstreamError,
  applied: readonly string[],
  failed: readonly string[],
  steps: readonly CompiledStep[],
  items: readonly Ref[],
  kind: CompiledKind | undefined,
): LegacyError {
  const legacy = upstreamToLegacy(error);
  const notRun = steps.flatMap((step) =>
    step.write
      ? step.forEach
        ? items.map((item) => describeWrite(step, item, kind))
        : [describeWrite(step, undefined, kind)]
      : [],
  );
  const notApplied = notRun.filter((what) => !applied.includes(what));
  const failedFirst = [...new Set([...failed, ...notApplied])];
  return new LegacyError(
    legacy.status,
    `${legacy.message}. Partly applied: ${applied.join(', ')}; not applied: ${failedFirst.join(', ') || 'nothing'}`,
    legacy.errors,
    legacy.headers,
  );
}
