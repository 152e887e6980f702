import { itemRoute, listRoute } from './read.js';
import type { RouteDef } from './route.js';

/** Privileges: read-only collection and item. */
export const privilegeRoutes: RouteDef[] = [
  listRoute('privileges', 'Privilege', 'Lists privileges'),
  itemRoute('privileges', 'Privilege', 'Reads a privilege'),
];
