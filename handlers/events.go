package handlers

import (
	"fmt"
	"unicode/utf8"
)

// Kubernetes event types, for Cause.Post.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// maxEventMessage caps the message of an Event, as the API server rejects
// very long ones.
const maxEventMessage = 1024

// Post posts a Kubernetes Event about the object, through the manager's event
// recorder (which aggregates repeated events). eventType is EventNormal or
// EventWarning; messages over 1024 bytes are cut. Posting is asynchronous
// and never fails the handler.
func (c *Cause) Post(eventType, reason, message string) {
	if c.EventSink == nil {
		return
	}
	c.EventSink(eventType, reason, truncate(message, maxEventMessage))
}

// Info posts a Normal Event about the object.
func (c *Cause) Info(reason, format string, args ...any) {
	c.Post(EventNormal, reason, fmt.Sprintf(format, args...))
}

// Warn posts a Warning Event about the object.
func (c *Cause) Warn(reason, format string, args ...any) {
	c.Post(EventWarning, reason, fmt.Sprintf(format, args...))
}

// Exception posts a Warning Event with reason "Error" and the error's
// message.
func (c *Cause) Exception(err error) {
	if err == nil {
		return
	}
	c.Post(EventWarning, "Error", err.Error())
}

// truncate cuts s to at most n bytes without splitting a character, marking
// the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
