package outpost

// Health statuses of a service, in its /health and the root /health.
const (
	HealthOK       = "ok"
	HealthDegraded = "degraded" // working, with a part impaired
	HealthDown     = "down"
)
