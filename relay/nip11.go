package relay

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/outpost-relay/outpost"
)

// information is the NIP-11 document. go-nostr's nip11 type writes every
// unknown field as "" (and created_at_lower_limit as 0) and has no "self";
// this one leaves out what is unknown.
type information struct {
	Name          string     `json:"name,omitempty"`
	Description   string     `json:"description,omitempty"`
	Icon          string     `json:"icon,omitempty"`
	PubKey        string     `json:"pubkey,omitempty"` // the operator's contact key
	Self          string     `json:"self,omitempty"`   // the relay's own key: it signs the service's events
	Contact       string     `json:"contact,omitempty"`
	SupportedNIPs []int      `json:"supported_nips"`
	Software      string     `json:"software"`
	Version       string     `json:"version"`
	Limitation    limitation `json:"limitation"`
}

// limitation advertises exactly the limits the relay enforces.
type limitation struct {
	MaxMessageLength    int   `json:"max_message_length,omitempty"`
	MaxSubscriptions    int   `json:"max_subscriptions,omitempty"`
	MaxFilters          int   `json:"max_filters,omitempty"`
	MaxLimit            int   `json:"max_limit"`
	DefaultLimit        int   `json:"default_limit"`
	MaxSubidLength      int   `json:"max_subid_length"`
	MaxEventTags        int   `json:"max_event_tags,omitempty"`
	MaxContentLength    int   `json:"max_content_length,omitempty"`
	CreatedAtUpperLimit int64 `json:"created_at_upper_limit"`
	AuthRequired        bool  `json:"auth_required"`
	PaymentRequired     bool  `json:"payment_required"`
	RestrictedWrites    bool  `json:"restricted_writes"`
}

// servedNIPs are the NIPs this relay implements itself; others (86, 87) are
// added by whoever serves them (AddSupportedNIP).
var servedNIPs = []int{1, 9, 11, 40, 42, 45, 56, 70, 77}

// info is what the NIP-11 document says of the relay besides its limits;
// NIP-86 may change the name, description and icon (management.info).
type info struct {
	name, description, contact string
	nips                       []int // sorted
}

// AddSupportedNIP lists a NIP that a service served with the relay
// implements (NIP-87 for the directory) in the NIP-11 document. Call it
// before the relay serves.
func (r *Relay) AddSupportedNIP(n int) {
	if !slices.Contains(r.info.nips, n) {
		r.info.nips = append(r.info.nips, n)
		slices.Sort(r.info.nips)
	}
}

// serveNIP11 answers Accept: application/nostr+json.
func (r *Relay) serveNIP11(w http.ResponseWriter, req *http.Request) {
	name, description, icon := r.info.name, r.info.description, ""
	if r.nip86 != nil {
		name, description, icon = r.nip86.changed(name, description, icon)
	}
	l := r.limits
	doc := information{
		Name: name, Description: description, Icon: r.absolute(icon),
		PubKey: r.operator, Self: r.self, Contact: r.info.contact, SupportedNIPs: r.info.nips,
		Software: "https://github.com/outpost-relay/outpost", Version: outpost.Version,
		Limitation: limitation{
			MaxMessageLength: l.MaxMessageLength, MaxSubscriptions: l.MaxSubscriptions, MaxFilters: l.MaxFilters,
			MaxLimit: l.MaxLimit, DefaultLimit: l.DefaultLimit, MaxSubidLength: maxSubIDLength,
			MaxEventTags: l.MaxEventTags, MaxContentLength: l.MaxContentLength,
			CreatedAtUpperLimit: int64(maxFuture / time.Second),
		},
	}
	if l.MaxMessageLength <= 0 {
		doc.Limitation.MaxMessageLength = int(l.frameLimit())
	}
	w.Header().Set("Content-Type", "application/nostr+json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Allow-Headers", "*")
	w.Header().Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	json.NewEncoder(w).Encode(doc)
}

// absolute makes a relative icon path a URL on this relay.
func (r *Relay) absolute(u string) string {
	if u == "" || strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return u
	}
	return r.url + "/" + strings.TrimPrefix(u, "/")
}
