/** How the PostgreSQL store connects (README "Configuration", the PG_* settings). */
export interface PostgresOptions {
  /** Most connections the pool opens (PG_POOL_MAX). */
  max?: number;
  /** Server-side limit per statement, 0 for none (PG_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
  /** Limit on opening a connection (PG_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
}
