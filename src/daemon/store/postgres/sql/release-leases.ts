/** Frees deliveries this daemon will not attempt now for any daemon's next claim. $1 ids, $2 this daemon. */
export const RELEASE_LEASES = `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL WHERE id = ANY($1::text[]) AND lease_owner = $2`;
