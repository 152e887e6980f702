import { existsSync } from 'node:fs';
import { openSqliteConnection } from '../src/store/sqlite/database.js';

/**
 * The rows of the ID table in the SQLite store `file` as another process sees them while a
 * command writes it (through this Node's own driver: better-sqlite3's build is Node 20's only);
 * 0 while the file or its table is not there yet, or the store is busy being made.
 */
export function idMapRows(file: string): number {
  if (!existsSync(file)) return 0;
  const db = openSqliteConnection(file);
  try {
    return (db.prepare('SELECT count(*) AS n FROM id_map').get() as { n: number }).n;
  } catch {
    return 0;
  } finally {
    db.close();
  }
}
