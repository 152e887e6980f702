import { z } from 'zod';
import type { EntityRecord, Relation, ResourceKind, SandboxData } from '../data.js';
import { parseReference, RESOURCES } from '../resources.js';
import { entityParam, itemResponse, noContent } from './respond.js';
import { defineRoute, JSON_BODY, type RouteDef } from './route.js';
import { Violations } from './validation.js';

/** A relation sub-resource: `POST /{owner}/{id}/{segment}` adds, `DELETE …/{segment}/{idParam}` removes. */
export interface LinkSpec {
  owner: ResourceKind;
  /** Path segment after the owner's id, e.g. `members`, `group_flags`. */
  segment: string;
  target: ResourceKind;
  /** Body property of the POST, e.g. `addedMembers`. */
  bodyKey: string;
  /** Path parameter of the DELETE, e.g. `userId`. */
  idParam: string;
  tag: string;
  relation(data: SandboxData): Relation;
}

/**
 * Resolves a list of references (IRIs of `kind`, either id form, or bare UUIDs) to existing
 * entities; every unknown one is a violation at `field[i]`.
 */
export function resolveReferences(
  v: Violations,
  data: SandboxData,
  field: string,
  kind: ResourceKind,
  values: readonly string[],
): EntityRecord[] {
  const out: EntityRecord[] = [];
  values.forEach((value, index) => {
    const id = parseReference(value, kind);
    const record = id === undefined ? undefined : data.store(kind).get(id);
    if (record) out.push(record);
    else v.add(`${field}[${index}]`, `Item not found for "${value}".`);
  });
  return out;
}

/** The POST and DELETE routes of one relation sub-resource. */
export function linkRoutes(spec: LinkSpec): RouteDef[] {
  const ownerLabel = RESOURCES[spec.owner].label.toLowerCase();
  const targetLabel = RESOURCES[spec.target].label.toLowerCase();
  const link = (data: SandboxData, ownerId: string, targetId: string, add: boolean) => {
    const relation = spec.relation(data);
    const [left, right] = relation.left === spec.owner ? [ownerId, targetId] : [targetId, ownerId];
    return add ? relation.link(left, right) : relation.unlink(left, right);
  };
  const schema = z.object({ [spec.bodyKey]: z.array(z.string()).nullable().optional() }).strict();
  return [
    defineRoute({
      method: 'POST',
      path: `/${spec.owner}/{id}/${spec.segment}`,
      summary: `Adds ${targetLabel}s to a ${ownerLabel} (already linked ones are fine); any unknown IRI is a 422 and changes nothing`,
      tag: spec.tag,
      body: { schema, mediaTypes: JSON_BODY, required: [spec.bodyKey] },
      attributesOf: spec.owner,
      response: { status: 200, body: 'item', kind: spec.owner },
      async handle(ctx) {
        const owner = entityParam(ctx, spec.owner);
        const body = await ctx.body();
        const v = new Violations();
        const values = body[spec.bodyKey];
        if (values === undefined || values === null) v.add(spec.bodyKey, 'This value should not be null.');
        const targets = resolveReferences(v, ctx.data, spec.bodyKey, spec.target, values ?? []);
        v.throwIfAny();
        for (const target of targets) link(ctx.data, owner.id, target.id, true);
        return itemResponse(ctx, spec.owner, owner);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `/${spec.owner}/{id}/${spec.segment}/{${spec.idParam}}`,
      summary: `Removes a ${targetLabel} from a ${ownerLabel} (204 also when it was not linked)`,
      tag: spec.tag,
      response: { status: 204, body: 'none' },
      handle(ctx) {
        const owner = entityParam(ctx, spec.owner);
        const target = entityParam(ctx, spec.target, spec.idParam);
        link(ctx.data, owner.id, target.id, false);
        return noContent();
      },
    }),
  ];
}
