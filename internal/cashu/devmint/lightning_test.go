package devmint

import (
	"strings"
	"testing"
	"time"
)

// An expired invoice cannot be paid, as on the real network.
func TestExpiredInvoiceCannotBePaid(t *testing.T) {
	t.Parallel()
	nd, err := NewNode("")
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	inv, err := nd.CreateInvoice(21)
	if err != nil {
		t.Fatal(err)
	}
	nd.mu.Lock()
	nd.invoices[inv.PaymentHash].Expiry = time.Now().Add(-time.Second).Unix()
	nd.mu.Unlock()
	if st, _ := nd.InvoiceStatus(inv.PaymentHash); st.Expiry != 0 {
		t.Errorf("an expired invoice has %d seconds left", st.Expiry)
	}
	if err := nd.PayInvoice(inv.PaymentRequest); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("paying an expired invoice: %v", err)
	}
}
