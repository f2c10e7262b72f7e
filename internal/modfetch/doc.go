// Package modfetch fetches a module package from the location a module
// registry's download endpoint answers with, into a directory that becomes
// the package root.
//
// It owns the go-getter style locations registries really return, and
// nothing else:
//
//   - an HTTPS archive: a ".zip", ".tar.gz" or ".tgz" path, or an
//     "?archive=zip|tar.gz|tgz" hint, which is removed from the URL before
//     it is fetched. GitHub-style archives with one top-level directory are
//     addressed with a "//*" subdirectory;
//   - a git repository over HTTPS: "git::https://host/repo.git", with
//     "?ref=" a tag, a branch or a full commit hash, and an optional
//     "&depth=N" (accepted; the checkout is always shallow where it can be);
//   - a "//subdir" suffix on either, split as go-getter splits it: the first
//     "//" after the scheme's "://", with the "?query" belonging to the
//     source even when written after the subdirectory.
//
// Plain http is accepted only to 127.0.0.1, ::1 and localhost (for tests).
//
// A location a registry named (FetchModule, with the mirror.ModuleLocation
// the registry client returns) is held to the location rule
// (httpx.Locations, Config.Locations) with that registry as its namer,
// before anything is fetched: off the registry's own origin (its download
// endpoint's, or https://REGISTRY_HOST) it is refused over plain http and
// on a loopback, link-local or private address unless the manifest allows
// its host (allowed_location_hosts), and it gets its host's credentials
// and client certificate only when the manifest's credentials or
// client_certificate block for that host lists the registry in
// for_locations_from: a registry cannot make tfmirror fetch a private
// module with another host's token and publish it. A failure then says
// which credentials were withheld and how to send them. Redirects of
// archive downloads are held to the rule too.
// Everything else is refused with an error that says so: other go-getter
// forms (ssh, file, s3::, hg::, shorthands such as "github.com/org/repo"),
// relative locations (the caller resolves them against the download URL)
// and an HTTP URL that is not an archive, which go-getter would have
// followed through its X-Terraform-Get header.
//
// Archives are downloaded with the caller's *http.Client through an
// httpx.Fetcher with the transfer policy provider downloads use
// (Config.Net: connect and header timeouts, a host that stops sending for
// the stall limit or sends slower than the speed limit fails the attempt,
// retries), within a byte limit, and extracted safely: no absolute or escaping names, no entry
// written through a link, no link that leaves the package, no hard link to
// outside, no devices or pipes, and limits on entries and on the bytes
// actually written (zip and gzip bombs). Files get mode 0644, or 0755 when
// an executable bit was set; directories 0755.
//
// Git repositories are fetched with the system git, run non-interactively
// with no system, user or credential-helper configuration, only the https
// protocol (http to loopback hosts) allowed, and no submodules: submodules
// and Git LFS objects are not fetched. The commit checked out is verified
// and reported; the .git directory is removed.
//
// Every git fetch is bounded while it runs, not after:
//
//   - the repository is fetched without a checkout, while a watchdog looks
//     at its work area (every 20-250 ms) and kills git as soon as it holds
//     more than the module limits (Config.Limits: bytes of files and
//     entries);
//   - before a file is checked out, the sizes the commit records for its
//     files (git ls-tree) are added up, and a commit whose files hold more
//     than the limits is refused; the checkout then writes the files as
//     committed (the attributes that rewrite content on checkout, such as
//     eol and working-tree-encoding, are turned off), under the same
//     watchdog;
//   - git's HTTP transfers give up as the transfer policy's stall and
//     speed limits say (http.lowSpeedLimit, http.lowSpeedTime), and
//     Config.Timeout bounds the whole fetch;
//   - git runs in a process group of its own, killed whole when the fetch
//     ends early; on Linux git also gets a parent-death signal (SIGKILL),
//     so that it dies with tfmirror, however tfmirror dies, and its helpers
//     with it.
//
// Errors quote outside text (git's messages, with what the server said in
// its "remote:" lines; a server's status; names in an archive): control
// characters in it are escaped, git's messages are cut to their last
// kilobyte, and a whole error to about 4 KiB.
//
// A registry's credentials (Config.Credentials) go only to the host they
// are for, and for a location a registry named only as the rule above
// says: as an Authorization header on the archive request, dropped on a
// redirect to another origin; for git, as an http.extraHeader scoped to that
// host's URL, passed through git's environment (GIT_CONFIG_COUNT) rather
// than its command line, with redirects refused. They never appear in a URL,
// in a Result or in an error. Client certificates (Config.ClientCertificates)
// likewise: archives get them from the caller's client; git, for the
// repository's host only, as http.sslCert and http.sslKey scoped to its URL
// and naming PEM files in a private directory removed after the fetch, with
// redirects refused.
//
// This package does not resolve module versions, talk to the registry's
// module protocol, hash or pack the result (hashing.PackModule does), nor
// decide where a package is published; the caller makes dst and removes it.
package modfetch
