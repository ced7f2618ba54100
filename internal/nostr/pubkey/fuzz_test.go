package pubkey

import "testing"

func FuzzParse(f *testing.F) {
	f.Add("npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6")
	f.Add("3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d")
	f.Add("npub1")
	f.Fuzz(func(t *testing.T, s string) {
		hex, err := Parse(s)
		if err != nil {
			return
		}
		if again, err := Parse(NPub(hex)); err != nil || again != hex {
			t.Fatalf("%q parsed to %q, whose npub does not parse back: %q %v", s, hex, again, err)
		}
	})
}
