import { normalizeUuid } from '../lib/uuid.js';

/**
 * The dashed UUID an IRI (`/iserv/idm/api/v1/users/<id>`, absolute or not) points at; the last
 * path segment may be dashed or base58. Undefined when it is not a UUID.
 */
export function iriToUuid(iri: string): string | undefined {
  const path = iri.replace(/[?#].*$/s, '');
  const segment = path.split('/').findLast((part) => part !== '');
  if (segment === undefined) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    return undefined;
  }
  return normalizeUuid(decoded);
}

/** The IRI of entity `uuid` (dashed or base58) in `collectionPath`, e.g. `/iserv/idm/api/v1/users`. */
export function uuidToIri(collectionPath: string, uuid: string): string {
  const dashed = normalizeUuid(uuid);
  if (dashed === undefined) throw new TypeError(`not a UUID (dashed or base58): ${JSON.stringify(uuid)}`);
  return `${collectionPath.replace(/\/+$/, '')}/${dashed}`;
}
