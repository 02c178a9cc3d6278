/*
Package webhook is where gopf's admission handlers will be served: validating
and mutating handlers registered like other handlers, on the manager's webhook
server, with certificates and webhook configurations managed for the operator.

It depends on package handlers and never the other way round. It holds no
code yet: admission handlers are tracked as their own piece of work.
*/
package webhook
