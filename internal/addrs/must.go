package addrs

// MustParseProvider is ParseProvider for addresses known to be valid
// (constants, tests): it panics on an error.
func MustParseProvider(s string) Provider { return must(ParseProvider(s)) }

// MustParseVersion is ParseVersion for versions known to be valid: it
// panics on an error.
func MustParseVersion(s string) Version { return must(ParseVersion(s)) }

// MustParsePlatform is ParsePlatform for platforms known to be valid: it
// panics on an error.
func MustParsePlatform(s string) Platform { return must(ParsePlatform(s)) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
