-- publish_event: ARGV = now, max_events, name, job id ("" for none), data. Appends a custom
-- event (BullMQ's QueueEventsProducer.publishEvent) to the stream, under the one static name
-- `custom` with the publisher's name and data as its fields, and returns its id. The name and
-- the data were checked by the client (lanemq_core's check_custom_event).
emit("custom", ARGV[4], "name", ARGV[3], "data", ARGV[5])
return event_next - 1
