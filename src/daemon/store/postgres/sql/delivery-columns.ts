/** The columns of DeliveryRow (rows.ts), as statements name them: prepared ones may not read `*`. */
export const DELIVERY_COLUMNS = `seq, id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url, depth, status,
  run_attempts, attempt_count, replay_count, due_at, created_at, enqueued_at, completed_at, first_attempt_at, last_error, dead_letter_id, dead_at, redelivery_of`;
