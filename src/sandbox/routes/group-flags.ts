import { itemRoute, listRoute } from './read.js';
import type { RouteDef } from './route.js';

/** Group flags: read-only collection and item. */
export const groupFlagRoutes: RouteDef[] = [
  listRoute('group_flags', 'GroupFlag', 'Lists group flags'),
  itemRoute('group_flags', 'GroupFlag', 'Reads a group flag'),
];
