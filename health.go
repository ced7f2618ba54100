package outpost

// Health statuses of a service, in its /health and the root /health.
const (
	HealthOK       = "ok"
	HealthDegraded = "degraded" // working, with a part impaired
	HealthDown     = "down"
)

// Health is the body of every /health: each service's own, and the root's,
// whose checks are the services' bodies. C is what the status was judged on.
type Health[C any] struct {
	Status  string `json:"status"`           // HealthOK, HealthDegraded or HealthDown
	Reason  string `json:"reason,omitempty"` // why it is not ok; absent when it is
	Version string `json:"version"`
	Checks  C      `json:"checks"`
}

// NewHealth is an ok report of checks.
func NewHealth[C any](version string, checks C) Health[C] {
	return Health[C]{Status: HealthOK, Version: version, Checks: checks}
}

// Fail lowers h to status (a worse status stays) and adds why to the reason.
func (h *Health[C]) Fail(status, why string) {
	if healthRank[status] > healthRank[h.Status] {
		h.Status = status
	}
	if h.Reason != "" {
		h.Reason += "; "
	}
	h.Reason += why
}

var healthRank = map[string]int{HealthOK: 0, HealthDegraded: 1, HealthDown: 2}

// Any is h with its checks untyped, as the root /health holds it.
func (h Health[C]) Any() Health[any] {
	return Health[any]{Status: h.Status, Reason: h.Reason, Version: h.Version, Checks: h.Checks}
}
