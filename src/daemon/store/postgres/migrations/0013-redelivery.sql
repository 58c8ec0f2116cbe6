-- A delivery an operator asked to send again is a new delivery of the same
-- event: it names the delivery it sends again (NULL for one a publish made).
ALTER TABLE deliveries ADD COLUMN redelivery_of text;
