package regproto

// ModuleVersions is the answer to GET :namespace/:name/:system/versions.
// Clients read its first module only, as OpenTofu does.
type ModuleVersions struct {
	Modules []ModuleVersionList `json:"modules"`
}

// ModuleVersionList is one module's entry in a versions document.
type ModuleVersionList struct {
	Versions []ModuleVersion `json:"versions"`
}

// ModuleVersion is one version of a module.
type ModuleVersion struct {
	Version string `json:"version"`
}

// ModuleDownload is the JSON body of a 200 answer to
// GET :namespace/:name/:system/:version/download: where the module
// package can be downloaded, a go-getter location.
type ModuleDownload struct {
	Location string `json:"location"`
}

// LocationHeader is the header in which a download answer may give the
// location instead of in a JSON body (on a 204 answer, say). Terraform
// reads the location only from it.
const LocationHeader = "X-Terraform-Get"
