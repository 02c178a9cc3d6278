// Package objsize keeps gopf's writes within the size an object can have.
// etcd refuses a request larger than its --max-request-bytes (1.5 MiB by
// default) with "etcdserver: request is too large", so an object cannot
// grow past about that size, whatever the API server accepts. gopf keeps a
// copy of the last-handled essence on the object; for an object whose spec
// is most of that limit, the copy alone would double it. So the engine
// measures before it writes:
//
//   - The state is kept in a compact form when the full one would not fit
//     (Compact): the last-handled essence (and each update handler's
//     handled essence) becomes a digest of the whole plus the values of the
//     fields handlers name (Field options), e.g.
//     {"$gopf":{"bytes":921640,"digest":"sha256:…"},"spec":{"replicas":3}}.
//     While an object's state is compact, handlers see the compact form
//     too: Old and New hold the named fields and the digest, and Diff lists
//     the changes of the named fields plus changes under $gopf (its digest
//     and size) when anything else changed. Handlers narrowed to a field
//     see that field as usual. The full form comes back with the next write
//     of state that fits (Expanded).
//   - A handler result that would not fit on the object is the handler's
//     permanent failure (CheckResult), reported with a Warning Event that
//     says why; the result is not written, and the handler is not retried.
//   - A write the API server refuses as too large anyway (a handler's own
//     patch, say) is reported once with a Warning Event and not retried at
//     the rate limiter's pace: the next change of the object tries again.
//
// objsize computes; the engine (internal/engine) measures its objects and
// reports.
package objsize
