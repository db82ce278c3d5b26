/**
 * Shared by the services' and the gateway's interceptors, which wrap every
 * call (Authorize's hot path included) with promise handlers instead of an
 * async frame of their own.
 */

/**
 * What an interceptor's `next` makes of a request, as a promise even when
 * it throws at once (as an async frame around it would have made it).
 */
export function settled<Req, Res>(next: (req: Req) => Promise<Res>, req: Req): Promise<Res> {
  try {
    return next(req);
  } catch (err) {
    return Promise.reject(err);
  }
}
