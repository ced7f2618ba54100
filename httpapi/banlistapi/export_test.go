package banlistapi

// OpenAPI is the package's OpenAPI document, for the tests (apitest checks
// every answer against it); outpost serves it as openAPI.
func OpenAPI() []byte { return openAPI }

// SetCachedListMax sets the longest list whose whole answer is cached, for
// the test of the longer one's; it returns a restore.
func SetCachedListMax(n int) func() {
	old := cachedListMax
	cachedListMax = n
	return func() { cachedListMax = old }
}
