package regproto

// Service IDs a discovery document names, with the version of the
// protocol each speaks.
const (
	// ProvidersV1 is the provider registry protocol, version 1.
	ProvidersV1 = "providers.v1"
	// ModulesV1 is the module registry protocol, version 1.
	ModulesV1 = "modules.v1"
)

// DiscoveryPath is the URL path of a host's service discovery document.
const DiscoveryPath = "/.well-known/terraform.json"

// Discovery is a service discovery document: service ID to the service's
// base URL, which may be relative to the document's. It holds the services
// whose value is a URL string, all that tfmirror writes; the registry
// client reads discovery documents through svchost.
type Discovery map[string]string
