package relay

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// information is the NIP-11 document. go-nostr's nip11 type writes every
// unknown field as "" (and created_at_lower_limit as 0) and has no "self";
// this one leaves out what is unknown.
type information struct {
	Name          string     `json:"name,omitempty"`
	Description   string     `json:"description,omitempty"`
	Icon          string     `json:"icon,omitempty"`
	Banner        string     `json:"banner,omitempty"`
	PubKey        string     `json:"pubkey,omitempty"` // the operator's contact key
	Self          string     `json:"self,omitempty"`   // the relay's own key: it signs the service's events
	Contact       string     `json:"contact,omitempty"`
	SupportedNIPs []int      `json:"supported_nips"`
	Software      string     `json:"software"`
	Version       string     `json:"version"`
	Limitation    limitation `json:"limitation"`
	PostingPolicy string     `json:"posting_policy,omitempty"`
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
// added to khatru's Info by whoever serves them.
var servedNIPs = []int{1, 9, 11, 40, 42, 45, 56, 70, 77}

// serveNIP11 answers Accept: application/nostr+json. Name, description and
// icon come from khatru's Info after its OverwriteRelayInformation hooks
// (NIP-86 changes them there).
func (r *Relay) serveNIP11(w http.ResponseWriter, req *http.Request) {
	info := *r.Relay.Info
	for _, overwrite := range r.Relay.OverwriteRelayInformation {
		info = overwrite(req.Context(), req, info)
	}
	nips := slices.Clone(servedNIPs)
	for _, n := range info.SupportedNIPs {
		if n, ok := n.(int); ok && !slices.Contains(nips, n) {
			nips = append(nips, n)
		}
	}
	slices.Sort(nips)
	l := r.limits
	doc := information{
		Name: info.Name, Description: info.Description, Icon: r.absolute(info.Icon), Banner: r.absolute(info.Banner),
		PubKey: r.operator, Self: r.self, Contact: info.Contact, SupportedNIPs: nips,
		Software: info.Software, Version: info.Version, PostingPolicy: info.PostingPolicy,
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

// absolute makes a relative icon or banner path a URL on this relay.
func (r *Relay) absolute(u string) string {
	if u == "" || strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return u
	}
	return r.url + "/" + strings.TrimPrefix(u, "/")
}
