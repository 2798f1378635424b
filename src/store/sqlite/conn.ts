import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { QUERIES, type QueryName } from './queries.js';

/**
 * One connection and its prepared statements. Preparing is the costly part of a statement, so each
 * SQL text of QUERIES is prepared once, on first use, and kept for the connection's life.
 */
export class Conn {
  private readonly stmts = new Map<QueryName, Statement>();

  constructor(readonly db: Database.Database) {}

  q(name: QueryName): Statement {
    let s = this.stmts.get(name);
    if (!s) {
      s = this.db.prepare(QUERIES[name]);
      this.stmts.set(name, s);
    }
    return s;
  }
}
