package mintdirapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite openapi.json from the description below")

// TestOpenAPIDocumentIsCurrent: openapi.json is generated from the
// description in this file (go test -run OpenAPI -update), so the /v1 copy of
// every path and the by-id/by-url pairs can't drift apart.
func TestOpenAPIDocumentIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := json.MarshalIndent(document(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile("openapi.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(b, openAPI) {
		t.Fatal("openapi.json is out of date: go test ./httpapi/mintdirapi -run OpenAPI -update")
	}
}

type obj = map[string]any

func typ(t string, nullable bool) obj {
	if nullable {
		return obj{"type": []string{t, "null"}}
	}
	return obj{"type": t}
}

func str() obj     { return typ("string", false) }
func nstr() obj    { return typ("string", true) }
func integer() obj { return typ("integer", false) }
func nint() obj    { return typ("integer", true) }
func num() obj     { return typ("number", false) }
func nnum() obj    { return typ("number", true) }
func boolean() obj { return typ("boolean", false) }
func dt() obj      { return obj{"type": "string", "format": "date-time"} }
func ndt() obj     { return obj{"type": []string{"string", "null"}, "format": "date-time"} }

// anyValue is any JSON value. (An empty schema would be too, but
// kin-openapi refuses null for it.)
func anyValue() obj {
	return obj{"type": []string{"string", "number", "integer", "boolean", "object", "array", "null"}, "items": obj{}}
}

func arr(items obj) obj { return obj{"type": "array", "items": items} }
func ref(name string) obj {
	return obj{"$ref": "#/components/schemas/" + name}
}
func enum(vals ...string) obj { return obj{"type": "string", "enum": vals} }
func desc(o obj, d string) obj {
	c := obj{}
	for k, v := range o {
		c[k] = v
	}
	c["description"] = d
	return c
}

// object requires every property (the seed's rule: every field present,
// null when unknown) and allows no others.
// object is an object of props, all required, and optional props, which
// an answer may leave out.
func object(props obj, optional ...obj) obj {
	req := make([]string, 0, len(props))
	for k := range props {
		req = append(req, k)
	}
	sortStrings(req)
	for _, o := range optional {
		for k, v := range o {
			props[k] = v
		}
	}
	return obj{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

// nullable is o or null.
func nullable(o obj) obj {
	o["type"] = []string{o["type"].(string), "null"}
	return o
}

// optional leaves names (omitted when empty) out of o's required fields.
func optional(o obj, names ...string) obj {
	var req []string
	for _, k := range o["required"].([]string) {
		if !slices.Contains(names, k) {
			req = append(req, k)
		}
	}
	o["required"] = req
	return o
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

var statuses = []string{"unknown", "online", "degraded", "offline", "abandoned"}

func schemas() obj {
	part := func(inputs obj) obj {
		p := obj{"score": num(), "max": num()}
		for k, v := range inputs {
			p[k] = v
		}
		return object(p)
	}
	return obj{
		"Error": obj{"type": "object", "required": []string{"error", "message"}, "properties": obj{
			"error": desc(str(), "snake_case error code"), "message": str(), "details": obj{"type": "object"}}},
		"Mint": object(obj{
			"mint_id":                desc(obj{"type": "string", "format": "uuid"}, "Stable id, independent of the mint's URLs"),
			"canonical_url":          str(),
			"urls":                   arr(str()),
			"name":                   nstr(),
			"icon_url":               nstr(),
			"status":                 enum(statuses...),
			"offline_since":          desc(ndt(), "First failed check of the outage; null unless offline or abandoned"),
			"last_success_at":        ndt(),
			"last_failure_at":        ndt(),
			"uptime_24h":             desc(nnum(), "Percent of checks that succeeded; null without checks"),
			"uptime_7d":              nnum(),
			"uptime_30d":             nnum(),
			"incidents_7d":           integer(),
			"incidents_30d":          integer(),
			"trust_score":            integer(),
			"trust_level":            enum("high", "medium", "low", "very_low", "unknown"),
			"audits_30d":             desc(integer(), "Audit rounds that tested the mint in 30 days (0 while audits are off)"),
			"audit_success_rate_30d": desc(nnum(), "Of those settled, the share that succeeded (0–1); null without one"),
			"last_audit_at":          ndt(),
			"last_audit_failure_at":  ndt(),
			"audit_held_sats":        desc(integer(), "What the audit wallet holds at the mint"),
		}),
		"MintURLs": object(obj{"canonical_url": str(), "urls": arr(object(obj{
			"url": str(), "type": enum("clearnet", "tor", "mirror"),
			"active": desc(boolean(), "Advertised in the mint's NUT-06 urls now, or the canonical URL of a mint that is not offline"),
		}))}),
		"Metadata": desc(object(obj{
			"name": nstr(), "pubkey": nstr(), "version": nstr(), "description": nstr(), "description_long": nstr(),
			"contact": obj{"type": []string{"array", "null"}, "items": object(obj{"method": str(), "info": str()})},
			"motd":    nstr(), "icon_url": nstr(),
			"urls":            obj{"type": []string{"array", "null"}, "items": str()},
			"tos_url":         nstr(),
			"nuts":            desc(obj{"type": []string{"object", "null"}}, "NUT number → settings, as the mint serves them"),
			"server_time":     desc(ndt(), "The mint's clock at the last check"),
			"last_fetched_at": ndt(),
			"keysets": obj{"type": []string{"array", "null"}, "items": object(obj{
				"id": str(), "unit": str(), "active": boolean(), "input_fee_ppk": nint()})},
		}), "NUT-06 info (all null before the first successful check) and the keysets (NUT-02)"),
		"HistoryEntry": object(obj{
			"fetched_at":  dt(),
			"change_type": enum("initial", "pubkey_changed", "version_changed", "nuts_changed", "urls_changed", "info_changed"),
			"diff": desc(obj{"type": "object", "additionalProperties": object(obj{"old": anyValue(), "new": anyValue()})},
				`Changed fields ("nuts.4" for a NUT) with their old and new values`),
			"version": nstr(),
		}),
		"Status": object(obj{
			"status":          desc(enum(statuses...), "By consensus of the fresh vantages: offline only when most of them see the mint offline, else what most see"),
			"offline_since":   desc(ndt(), "Since when most vantages have seen the mint offline; null unless offline or abandoned"),
			"last_checked_at": desc(ndt(), "This outpost's last check"),
			"current_rtt_ms":  desc(nint(), "RTT of this outpost's last check; null when it failed"),
			"last_error":      desc(nstr(), "Error kind of this outpost's last check when it failed"),
			"vantages": desc(arr(object(obj{
				"monitor":         desc(str(), "The monitor's npub"),
				"self":            desc(boolean(), "This outpost's own checks"),
				"status":          desc(enum(statuses...), "What that monitor itself sees"),
				"last_checked_at": ndt(),
				"rtt_ms":          nint(),
				"offline_since":   ndt(),
			})), "This outpost's own checks first, then each followed monitor (OUTPOST_MONITORS) whose latest status event for the mint is fresh (under 2 hours old)"),
		}),
		"Uptime": object(obj{
			"window": enum("24h", "7d", "30d"), "uptime_pct": nnum(),
			"downtime_seconds": desc(integer(), "Time before each failed check, at most two probe intervals each"),
			"avg_rtt_ms":       nint(), "p95_rtt_ms": nint(), "total_checks": integer(), "ok_checks": integer(),
		}),
		"Timeseries": object(obj{"window": enum("24h", "7d", "30d"), "bucket": enum("5m", "15m", "1h"), "points": arr(object(obj{
			"timestamp": desc(dt(), "Bucket start"),
			"state":     desc(enum("online", "degraded", "offline", "unknown"), "Worst status seen in the bucket; unknown without checks"),
			"ok":        desc(boolean(), "Every check in the bucket succeeded"),
			"rtt_ms":    desc(nint(), "Mean RTT of successful checks"),
		}))}),
		"Audit": object(obj{
			"at": desc(dt(), "When the round began"), "role": enum("payer", "payee"), "counterpart": desc(str(), "The other mint's URL"),
			"amount_sats": integer(), "fee_sats": desc(integer(), "What the melt cost beyond the amount (the payer's; 0 for the payee)"),
			"fee_reserve_sats": desc(integer(), "The fee reserve the payer quoted (0 for the payee)"),
			"ms":               desc(integer(), "The payer: the melt until it said paid; the payee: the melt until it minted"),
			"outcome":          enum("ok", "failed", "pending"), "error": nstr(),
		}),
		"Deposit": optional(object(obj{
			"id": str(), "mint_url": str(), "quote": desc(str(), "The mint quote (a deposit by invoice)"), "invoice": desc(str(), "The bolt11 invoice to pay (a deposit by invoice)"),
			"amount": integer(), "state": enum("unpaid", "pending", "done", "failed"),
			"received_sats": integer(), "fee_sats": integer(), "created_at": desc(integer(), "Unix time"), "error": str(),
			"expiry": desc(integer(), "The quote's expiry, Unix time (a deposit by invoice, when the mint gave one); a day after it an unpaid deposit is given up (failed)"),
		}), "quote", "invoice", "error", "expiry"),
		"AuditHoldings": object(obj{
			"mints": arr(object(obj{"mint_url": str(), "held_sats": integer(), "quarantined_sats": integer(), "in_flight_sats": integer(),
				"lost_to_mint_sats": integer(), "mint_surplus_sats": integer(), "internal_fee_sats": integer(),
				"withdrawn": desc(boolean(), "The mint gets no more sats: it failed its two newest audits, or it is flagged"),
				"flag": desc(nullable(object(obj{"mint_url": str(), "at": dt(), "reason": str(), "sats": integer()})),
					"Why the holdings check flagged the mint (held ecash said spent, valid proofs refused); null when it did not")})),
			"books": desc(object(obj{"deposited_sats": integer(), "mint_surplus_sats": integer(), "held_sats": integer(), "fees_paid_sats": integer(),
				"in_flight_sats": integer(), "lost_to_mint_sats": integer(), "balanced": boolean()}),
				"deposited_sats + mint_surplus_sats = held_sats + fees_paid_sats + in_flight_sats + lost_to_mint_sats"),
			"open_deposits": arr(ref("Deposit")),
		}),
		"Incident": object(obj{
			"started_at": dt(), "resolved_at": ndt(), "duration_seconds": integer(),
			"severity": desc(enum("minor", "major", "critical"), "minor < 15 min ≤ major < 4 h ≤ critical; an open incident is rated by its length so far"),
			"seen_by":  desc(arr(str()), "npubs of the monitors (this outpost's own among them) that saw the mint offline during the incident"),
			"cause":    desc(enum("offline", "payout_failed"), "offline: an outage; payout_failed: the directory's audit of the mint failed (over at once, major)"),
			"detail":   desc(nstr(), "What failed, for a failed payout; null for an outage"),
		}),
		"Trust": object(obj{
			"score_total": desc(integer(), "0–100: the sum of the breakdown, rounded and clamped"),
			"score_level": enum("high", "medium", "low", "very_low", "unknown"),
			"breakdown": object(obj{
				"uptime": part(obj{"uptime_30d": nnum()}),
				"speed":  part(obj{"avg_rtt_ms_7d": nint(), "slow_ms": integer()}),
				"reviews": part(obj{"rated_count": integer(), "average_rating": nnum(),
					"weighted_count": desc(num(), "The rated reviews' weights summed: each author counts by his weight in outpost's web of trust (rated_count without one)")}),
				"identity": part(obj{"has_pubkey": boolean(), "has_contact": boolean(), "https": boolean(), "has_name": boolean(), "has_description": boolean()}),
				"penalties": part(obj{"min": num(), "offline": boolean(), "degraded": boolean(), "incidents_30d": integer(),
					"pubkey_changed_30d": boolean()}),
				"audits": part(obj{"min": num(), "audits_30d": integer(), "audit_success_rate_30d": nnum(),
					"newest_failed": boolean(), "vantages": desc(integer(), "Monitors whose audits count: this outpost's and the followed monitors' (their kind-38166 audit tags); the lowest success rate is scored"), "capped": desc(boolean(), "The newest audit failed or the success rate is under 90%: the score is at most 74, never high")}),
			}),
			"computed_at": dt(),
		}),
		"Review": object(obj{
			"event_id": str(), "pubkey": desc(str(), "npub of the author"), "created_at": dt(),
			"rating":  desc(obj{"type": []string{"integer", "null"}, "minimum": 1, "maximum": 5}, "From a rating tag, else a leading [N/5]; null when neither"),
			"content": desc(str(), "Without the [N/5] prefix"),
			"weight": desc(obj{"type": "number", "minimum": 0, "maximum": 1},
				"The author's say in the trust score: his weight in outpost's web of trust (docs/wot.md), 1 for everyone without one; 0 outside it: listed, not counted"),
		}, obj{"followed_by_viewer": desc(boolean(), "With ?viewer=: whether the viewer's contact list follows the author")}),
		"ReviewSummary": object(obj{"count": integer(), "rated_count": integer(),
			"average_rating": desc(nnum(), "Weighted by the authors' weights; null when no rated review weighs anything"),
			"weighted_count": desc(nnum(), "The rated reviews' weights summed (rated_count when everyone counts fully); null in a summary made before weights")}),
		"Views": object(obj{
			"views_24h": integer(), "views_7d": integer(), "views_30d": integer(), "unique_sessions_30d": integer(),
			"view_velocity": desc(num(), "Views in the last 24 h divided by the daily average of the last 7 days; 0 without history"),
		}),
		"Features": object(obj{
			"supported_nuts":             obj{"type": []string{"array", "null"}, "items": integer()},
			"supports_bolt11":            obj{"type": []string{"boolean", "null"}},
			"min_amount":                 nint(),
			"max_amount":                 nint(),
			"has_tor_endpoint":           boolean(),
			"has_multiple_urls":          boolean(),
			"feature_completeness_score": desc(nnum(), "0–1; docs/mintdir.md (Features) gives the formula"),
		}),
		"SubmitResult": object(obj{"mint_id": obj{"type": "string", "format": "uuid"}, "status": enum("queued", "exists"), "message": str()}),
		"Health": desc(obj{"type": "object", "additionalProperties": false, "required": []string{"status", "version", "checks"}, "properties": obj{
			"status":  desc(enum("ok", "degraded", "down"), "down: the store cannot be read; degraded: the prober lags two intervals"),
			"reason":  desc(str(), "Why the status is not ok; absent when ok"),
			"version": str(),
			"checks": object(obj{
				"store":               enum("ok", "error"),
				"mints_total":         integer(),
				"last_probe_cycle_at": desc(ndt(), "When the prober last had every due mint started"),
				"probe_lag_seconds":   desc(num(), "How long the most overdue mint has waited"),
			}),
		}}, "The one shape of every /health in outpost: status, reason when not ok, version, and the checks the status was judged on"),
		"Stats": object(obj{
			"mints_total": integer(),
			"by_status": object(func() obj {
				o := obj{}
				for _, s := range statuses {
					o[s] = integer()
				}
				return o
			}()),
			"avg_uptime_24h": nnum(), "avg_rtt_ms_24h": nint(), "checks_total": integer(), "incidents_open": integer(),
			"reviews_total":      integer(),
			"trust_distribution": object(obj{"high": integer(), "medium": integer(), "low": integer(), "very_low": integer(), "unknown": integer()}),
			"nut_adoption":       arr(object(obj{"nut": integer(), "count": integer()})),
		}),
		"MintList": object(obj{"mints": arr(ref("Mint")), "total": integer(), "limit": integer(), "offset": integer()}),
	}
}

func jsonBody(d string, schema obj) obj {
	return obj{"description": d, "content": obj{"application/json": obj{"schema": schema}}}
}

func errResp(d string) obj { return jsonBody(d, ref("Error")) }

func responses() obj {
	return obj{
		"BadRequest": errResp("Invalid request: a bad parameter (invalid_window, invalid_bucket, invalid_limit, invalid_before, invalid_status, invalid_sort, invalid_offset), missing_url, invalid_mint_url, invalid_json (also anything after the JSON value), invalid_field, or a malformed query string (invalid_query)"),
		"NotFound":   errResp("Unknown mint id or URL (error mint_not_found)"),
		"RateLimited": obj{"description": "Rate limit exceeded (error rate_limit_exceeded)",
			"content": obj{"application/json": obj{"schema": ref("Error")}},
			"headers": obj{"Retry-After": obj{"description": "Seconds to wait", "required": true, "schema": integer()}}},
		"TooLarge":     errResp("The request body is larger than 64 KiB (error request_too_large)"),
		"StorageFull":  errResp("The server cannot store writes now; reads still work. Error insufficient_storage: too little disk space is left, and writes resume by themselves once space is freed; error storage_unavailable: its data directory was removed while it ran, and writes resume only once it is restarted"),
		"Timeout":      errResp("The request body did not arrive within 30 seconds (error request_timeout); the connection is closed"),
		"Internal":     errResp("Internal error"),
		"IPBlocked":    errResp("The client's address is blocked (error ip_blocked)"),
		"Unauthorized": errResp("No API key, or one that is unknown or revoked (error unauthorized)"),
		"Forbidden":    errResp("An API key without the admin role (error forbidden), or a blocked address (error ip_blocked)"),
	}
}

func rref(name string) obj { return obj{"$ref": "#/components/responses/" + name} }

func qparam(name, d string, schema obj, required bool) obj {
	return obj{"name": name, "in": "query", "required": required, "description": d, "schema": schema}
}

var (
	pLimit  = qparam("limit", "Page size, 1–500 (default 50)", obj{"type": "integer", "minimum": 1, "maximum": 500}, false)
	pBefore = qparam("before", "Only entries before this time (ISO 8601): the next page starts at the last one's time", dt(), false)
	pWindow = qparam("window", "Default 24h", enum("24h", "7d", "30d"), false)
	pViewer = qparam("viewer", "A npub (or hex key): mark the reviews by keys the viewer's contact list follows (\"reviewed by people you follow\"); not a key: 400 invalid_viewer", str(), false)
)

// mintResources are the seed's per-mint endpoints; name makes their
// operationIds (getMintTrust, getMintTrustByURL).
func mintResources() []struct {
	path, name, summary, description, schema string
	params                                   []obj
} {
	return []struct {
		path, name, summary, description, schema string
		params                                   []obj
	}{
		{"", "Mint", "Mint core record (counts a view)", "The mint's core record: its id and URLs, name, status, uptime over 24 hours, 7 and 30 days, incidents, trust. A GET counts as a view (a HEAD does not).", "Mint", nil},
		{"/urls", "MintURLs", "The mint's URLs", "The URLs the mint is known by: canonical_url (the one it was added with, the one probed) and those its NUT-06 info lists, each clearnet, tor or mirror, and whether it is active.", "MintURLs", nil},
		{"/metadata", "MintMetadata", "NUT-06 metadata", "The mint's NUT-06 info as of its last successful check (all null before one), the mint's clock then, and its keysets (NUT-02) with units and fees.", "Metadata", nil},
		{"/metadata/history", "MintMetadataHistory", "Metadata changes, newest first", "Changes of the mint's info, newest first: what changed, the changed fields with their old and new values, and the mint's version then. Paged with limit and before.", "", []obj{pLimit, pBefore}},
		{"/status", "MintStatus", "Lightweight status", "online, degraded, offline, abandoned or unknown, by consensus of this outpost's checks and the followed monitors'; when the outage began; this outpost's last check's time, RTT and error kind; and what each vantage sees.", "Status", nil},
		{"/uptime", "MintUptime", "Uptime summary of a window", "Uptime over a window (24h by default, 7d or 30d): the share of successful checks (429s from the mint not counted), downtime, average and p95 RTT, and the check counts.", "Uptime", []obj{pWindow}},
		{"/uptime/timeseries", "MintUptimeTimeseries", "Uptime timeseries, newest bucket first", "The window in buckets (5m, 15m or 1h; 5m for 24h and 1h otherwise by default), newest first: the worst status seen, whether every check succeeded, the mean RTT. Paged with limit and before.", "Timeseries", []obj{pWindow,
			qparam("bucket", "Default 5m for 24h, 1h for 7d and 30d", enum("5m", "15m", "1h"), false),
			pLimit, pBefore}},
		{"/incidents", "MintIncidents", "Incidents, newest first", "Outages and failed payouts (audits), newest first: when each began and ended, how long it lasted, its severity (minor under 15 minutes, major under 4 hours, critical beyond; an open one is rated by its length so far), and which monitors saw it. Paged with limit and before.", "", []obj{pLimit, pBefore}},
		{"/trust", "MintTrust", "Trust score with its breakdown", "The trust score (0-100) and level, with its breakdown (uptime, speed, reviews, identity, penalties, audits) and the inputs each used; docs/mintdir.md (Trust score) gives the formula.", "Trust", nil},
		{"/reviews", "MintReviews", "NIP-87 reviews (kind 38000, k=38172), newest first, one per author", "NIP-87 reviews published to this relay that name one of the mint's URLs or its pubkey: one per author (the newest), the operator's own left out; rating from a rating tag or a leading [N/5], else null; each with its author's weight in the trust score (0 outside outpost's web of trust). With a summary. Paged with limit and before; with viewer, the reviews by keys the viewer follows are marked.", "", []obj{pLimit, pBefore, pViewer}},
		{"/views", "MintViews", "View counts of the core record", "How often the core record was read in 24 hours, 7 and 30 days, distinct visitors in 30 days (salted daily hashes; no IP is kept), and the view velocity.", "Views", nil},
		{"/audits", "MintAudits", "Audit rounds, newest first", "The mint's part in the directory's audits (opt-in, --audit): each round melts ecash at one mint (the payer) to pay a mint quote at another (the payee). Each entry: when the round began, the mint's role, the other mint, the amount, the fee paid and the fee reserve quoted (the payer's), how long its part took in milliseconds, the outcome (ok, failed or pending) and the failure. Empty while audits are off. Paged with limit and offset.", "", []obj{pLimit, qparam("offset", "Entries to skip", obj{"type": "integer", "minimum": 0}, false)}},
		{"/features", "MintFeatures", "Features derived from the metadata", "Features derived from the latest info: supported NUTs, bolt11 minting and melting, amount limits, a Tor endpoint, several URLs, and a completeness score (0-1).", "Features", nil},
	}
}

func listSchema(path string) obj {
	switch path {
	case "/metadata/history":
		return object(obj{"history": arr(ref("HistoryEntry"))})
	case "/incidents":
		return object(obj{"incidents": arr(ref("Incident"))})
	case "/audits":
		return object(obj{"audits": arr(ref("Audit"))})
	case "/reviews":
		return object(obj{"reviews": arr(ref("Review")), "summary": ref("ReviewSummary")},
			obj{"followed_by_viewer": desc(obj{"type": "integer", "minimum": 0}, "With ?viewer=: how many reviews of the page are by keys the viewer follows")})
	}
	return nil
}

// Any request may meet these (see apitest.AssertCommonStatuses).
func withCommon(responses obj) obj {
	for code, name := range map[string]string{"400": "BadRequest", "403": "IPBlocked", "429": "RateLimited", "500": "Internal"} {
		if responses[code] == nil {
			responses[code] = rref(name)
		}
	}
	return responses
}

func document() obj {
	paths := obj{}
	add := func(path, id string, op obj, method string) {
		op["operationId"] = id
		op["responses"] = withCommon(op["responses"].(obj))
		for _, prefix := range []string{"", "/v1"} {
			item, _ := paths[prefix+path].(obj)
			if item == nil {
				item = obj{}
				paths[prefix+path] = item
			}
			o := obj{}
			for k, v := range op {
				o[k] = v
			}
			if prefix != "" {
				o["summary"] = op["summary"].(string) + " (earlier /v1 form)"
				o["description"] = "The same as " + strings.ToUpper(method) + " " + path + ", under the seed's earlier /v1 base path."
				o["operationId"] = "v1" + strings.ToUpper(id[:1]) + id[1:]
				o["tags"] = []string{"v1"}
			}
			item[method] = o
		}
	}
	for _, r := range mintResources() {
		schema := listSchema(r.path)
		if schema == nil {
			schema = ref(r.schema)
		}
		ok := jsonBody("OK", schema)
		idParam := obj{"name": "mint_id", "in": "path", "required": true, "schema": obj{"type": "string"}, "description": "The mint's id (a merged id answers as the mint it became)"}
		urlParam := qparam("url", "The mint's URL, in any spelling that normalises to one it is known by", str(), true)
		add("/mints/{mint_id}"+r.path, "get"+r.name, obj{"summary": r.summary + ", by mint id", "tags": []string{"Mints"},
			"description": r.description + " By the mint's id; an unknown id is 404 mint_not_found.",
			"parameters":  append([]obj{idParam}, r.params...),
			"responses":   obj{"200": ok, "404": rref("NotFound")}}, "get")
		add("/mints/by-url"+r.path, "get"+r.name+"ByURL", obj{"summary": r.summary + ", by mint URL", "tags": []string{"Mints"},
			"description": r.description + " By any URL the mint is known by; an unknown URL is 404 mint_not_found, none 400 missing_url.",
			"parameters":  append([]obj{urlParam}, r.params...),
			"responses":   obj{"200": ok, "404": rref("NotFound")}}, "get")
	}
	add("/mints", "listMints", obj{"summary": "List mints", "tags": []string{"Mints"},
		"description": "The catalogue, filtered by status, sorted by trust (the default), 30-day uptime or name, paged with limit and offset. It may be up to 2 seconds behind.",
		"parameters": []obj{
			qparam("status", "Only mints in this status", enum(statuses...), false),
			qparam("sort", "trust (default, highest first), uptime (30-day, highest first) or name", enum("trust", "uptime", "name"), false),
			pLimit, qparam("offset", "Mints to skip", obj{"type": "integer", "minimum": 0}, false)},
		"responses": obj{"200": jsonBody("A page of mints", ref("MintList"))}}, "get")
	add("/mints/submit", "submitMint", obj{"summary": "Submit a mint by URL", "tags": []string{"Mints"},
		"description": "The URL must be http(s) without credentials, query or fragment, with a port from 1 to 65535 and no IPv6 zone, and its host must not resolve to private, loopback or link-local addresses; it is stored normalised (lower-case host, no default port, dot segments resolved, no trailing slash), so a known mint answers 200 exists. A new mint is probed at once. Rate limited per client IP (default 10 per hour).",
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": obj{"type": "object", "required": []string{"mint_url"},
			"properties": obj{"mint_url": str()}}}}},
		"responses": obj{
			"202": jsonBody("A new mint, queued for its first check", ref("SubmitResult")),
			"200": jsonBody("The mint is known already (normalised URL)", ref("SubmitResult")),
			"408": rref("Timeout"), "413": rref("TooLarge"), "507": rref("StorageFull")}}, "post")
	add("/health", "getHealth", obj{"summary": "Service health (no outbound calls)", "tags": []string{"Service"},
		"description": "Whether the prober keeps up (degraded when it lags two intervals), how many mints there are, and when the last probe cycle started; no outbound calls. 503 when the directory is down.",
		"responses":   obj{"200": jsonBody("ok or degraded (the prober lags two intervals)", ref("Health")), "503": jsonBody("down", ref("Health"))}}, "get")
	add("/stats", "getStats", obj{"summary": "Directory statistics", "tags": []string{"Service"},
		"description": "Counts by status, average uptime and RTT over 24 hours, checks, open incidents, reviews, the trust distribution and NUT adoption; cached for 10 seconds.",
		"responses":   obj{"200": jsonBody("Statistics (cached for 10 s)", ref("Stats"))}}, "get")
	admin := func(o obj) obj {
		o["tags"], o["security"] = []string{"Admin"}, []obj{{"apiKey": []string{}}}
		o["responses"].(obj)["401"], o["responses"].(obj)["403"] = rref("Unauthorized"), rref("Forbidden")
		return o
	}
	add("/admin/audit", "getAuditHoldings", admin(obj{"summary": "The audit wallet's holdings and books (admin)",
		"description": "503 audit_off without --audit. Mints the deposits paid since, then answers what the audit wallet holds at each mint and its books, which balance: deposited_sats + mint_surplus_sats = held_sats + fees_paid_sats + in_flight_sats + lost_to_mint_sats.",
		"responses":   obj{"200": jsonBody("Holdings", ref("AuditHoldings")), "503": errResp("Audits are off (audit_off)")}}), "get")
	add("/admin/audit/deposit", "depositAudit", admin(obj{"summary": "Fund the audit wallet (admin)",
		"description": "503 audit_off without --audit. {mint_url, amount}: a mint quote's invoice at that mint, whose sats are the audit wallet's once it is paid; {token}: a Cashu token's ecash, swapped in at its mint. Never beyond --audit-max-per-mint at one mint (422 over_cap).",
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": obj{"type": "object",
			"properties": obj{"mint_url": str(), "amount": desc(integer(), "Sats"), "token": desc(str(), "A cashuA or cashuB token")}}}}},
		"responses": obj{"201": jsonBody("The deposit", ref("Deposit")), "408": rref("Timeout"), "413": rref("TooLarge"),
			"422": errResp("Over the cap at that mint (over_cap), or a token in another unit (unsupported_unit)"),
			"502": errResp("The mint failed the request (mint_failed)"), "503": errResp("Audits are off (audit_off)"), "507": rref("StorageFull")}}), "post")
	paths["/openapi.json"] = obj{"get": obj{"summary": "This document", "tags": []string{"Service"}, "operationId": "getOpenAPI",
		"description": "This document (OpenAPI 3.1).",
		"responses":   withCommon(obj{"200": obj{"description": "OpenAPI 3.1", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}})}}

	return obj{
		"openapi": "3.1.0",
		"info": obj{"title": "outpost mint directory", "version": "1.0.0", "description": strings.Join([]string{
			"A read-only catalogue that monitors Cashu mints: uptime, metadata, trust, reviews (NIP-87) and popularity.",
			"Every per-mint endpoint is served by mint id and by mint URL; every path is also served under /v1.",
			"Timestamps are ISO 8601 UTC, durations seconds, RTTs milliseconds. Errors are {\"error\": code, \"message\": text}.",
			"Only the audit wallet's admin endpoints need credentials: an admin API key of the ban list (Authorization: Bearer). Every request counts against the per-client rate limit (429 with Retry-After).",
			"Every GET also answers HEAD, with the same status and headers and no body.",
			"A method a path does not have is 405 method_not_allowed with an Allow header.",
			"Before any of this service's code runs, Go's net/http refuses, in plain text, a request line it cannot parse (400, e.g. a malformed percent-escape in the path) and request headers over 64 KiB (431).",
			"A client whose address the ban list blocks (an address or a CIDR network, set over NIP-86, the admin API or the CLI) gets 403 ip_blocked from every route.",
		}, " "),
			"contact": obj{"name": "outpost", "url": "https://github.com/outpost-relay/outpost"},
			"license": obj{"name": "MIT", "identifier": "MIT"}},
		"servers":  []obj{{"url": "/mintdir"}},
		"security": []obj{},
		"tags": []obj{{"name": "Mints", "description": "The catalogue and each mint's resources"}, {"name": "Service", "description": "Health, statistics and this document"},
			{"name": "Admin", "description": "The audit wallet (with --audit)"},
			{"name": "v1", "description": "The seed's earlier form: the same endpoints under /v1"}},
		"paths": paths,
		"components": obj{"schemas": schemas(), "responses": responses(),
			"securitySchemes": obj{"apiKey": obj{"type": "http", "scheme": "bearer", "description": "An outpost API key (opk_...) with the admin role"}}},
	}
}
