/**
 * The database cannot be reached or did not answer in time: it is restarting, unreachable, out of
 * connections, or a statement ran past its timeout. Nothing is wrong with the request, and asking
 * again later may succeed. An operation that failed this way after its statements were sent may or
 * may not have taken effect; every operation is guarded, so repeating it is safe (a repeated report
 * of a landed completion is refused as `lease_completed`).
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
