-- Placeholder on the redeliver branch only: migration 0013 is another
-- branch's (attempt requests), and migrations must be numbered without a gap.
-- The merge takes that branch's file of the same name instead of this one.
SELECT 1;
