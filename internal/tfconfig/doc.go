// Package tfconfig reads OpenTofu and Terraform root module directories and
// reports which providers they need, and with which version constraints, the
// way OpenTofu collects them for "tofu init"; and which module registry
// packages they call, with the version constraints written for them.
//
// It owns reading configurations: finding the configuration files of a module
// directory (.tf, .tf.json, .tofu, .tofu.json, override files and the .tofu
// precedence), decoding required_providers, provider, resource, data,
// ephemeral, import, check and module blocks (source and version) in both
// the native and the JSON syntax, following local module calls and remote
// modules already installed by "tofu init" under .terraform/modules, and
// reporting problems with their file, line and column. It tells module
// registry sources from other module sources by OpenTofu's rule (not a
// local path, and parses as a registry address). ModuleCalls reads a
// fetched module package the same way, for mirroring the modules it calls:
// its local calls must stay inside the package, and it never reads
// .terraform/modules.
//
// It evaluates a module call's source and version as OpenTofu's static
// evaluator does (variables, with values from Options and the root's
// .tfvars files, locals, path.*, terraform.workspace and a bounded set of
// functions), and reads the root's test files (.tftest.hcl, .tofutest.hcl
// and their JSON forms, in the root and tests/) for the providers and
// modules they need, unless Options.NoTests.
//
// It is not responsible for choosing versions: constraints are returned as
// written and intersecting them is the caller's job. It never uses the
// network: a remote module that is not installed is reported as a warning,
// not fetched. State is not read.
package tfconfig
