// Package gate holds the gate every handler of an operator passes (Gate):
// closed until the startup handlers succeed and while peering pauses the
// operator, with callbacks for when it opens and when it pauses.
package gate
