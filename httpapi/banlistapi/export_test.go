package banlistapi

// OpenAPI is the package's OpenAPI document, for the tests (apitest checks
// every answer against it); outpost serves it as openAPI.
func OpenAPI() []byte { return openAPI }
