-- A subscriber URL's query string is a credential (`?api_key=...`), like its
-- user information: deliveries and dead letters carry the URL masked
-- (`https://****@host/hook?****`), and the dispatcher takes the real one from
-- the subscription, where it is sealed. Rows written before then are masked
-- here; subscriptions themselves are sealed by the daemon when it opens them
-- (it holds the master key, this script does not).
UPDATE deliveries
   SET service_base_url = regexp_replace(
         regexp_replace(service_base_url, '^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@]*@', '\1****@'),
         '\?[^#]+', '?****')
 WHERE service_base_url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@]*@'
    OR service_base_url ~ '\?[^#]';
