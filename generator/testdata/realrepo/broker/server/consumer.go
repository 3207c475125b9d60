package server

// Consumer delivers a stream's messages. An explicit-ack consumer
// redelivers every message that is not acknowledged within its ack wait,
// so delivery is at least once.
type Consumer struct{}
