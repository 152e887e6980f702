/**
 * What `store.schema` may be: a plain lower-case identifier of at most 63 characters, quoted
 * wherever it is used (so reserved words such as `user` or `select` work too), and not starting
 * with `pg_`, which PostgreSQL keeps for its system schemas ("unacceptable schema name"), nor
 * `information_schema`, the SQL standard's system schema (PostgreSQL takes tables there, among
 * its views). Checked when the configuration loads, and again by the store.
 */
export const SCHEMA_NAME = /^(?!pg_|information_schema$)[a-z_][a-z0-9_]{0,62}$/;

/** Why a name was refused, for the configuration's error message. */
export const SCHEMA_NAME_RULE =
  'a plain lower-case identifier (letters, digits, _; at most 63; not starting with a digit) not starting with pg_ and not information_schema, which PostgreSQL keeps for its system schemas';
