-- Placeholder on the redeliver branch only: migrations must be numbered
-- without a gap, and this branch was told to number its own 0014, 0013
-- being planned for attempt requests (which were merged without a schema
-- change). Drop this file and renumber 0014-redelivery.sql to 0013 if no
-- 0013 comes.
SELECT 1;
