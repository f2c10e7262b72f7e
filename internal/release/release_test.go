package release

import (
	"archive/tar"
	"compress/gzip"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
)

// What the image promises (docs/ci.md, "The container image").
const (
	wantImage   = "ghcr.io/tfmirror/tfmirror"
	wantBase    = "gcr.io/distroless/static-debian12:nonroot"
	wantSource  = "https://github.com/tfmirror/tfmirror"
	wantLicense = "MPL-2.0"
)

var wantPlatforms = []string{"linux/amd64", "linux/arm64"}

// config is the part of .goreleaser.yaml these tests read.
type config struct {
	Version int     `yaml:"version"`
	Builds  []build `yaml:"builds"`
	Archive []struct {
		Files []string `yaml:"files"`
	} `yaml:"archives"`
	DockersV2       []dockerV2 `yaml:"dockers_v2"`
	Dockers         []any      `yaml:"dockers"`
	DockerManifests []any      `yaml:"docker_manifests"`
}

type build struct {
	ID     string   `yaml:"id"`
	Binary string   `yaml:"binary"`
	Env    []string `yaml:"env"`
	Flags  []string `yaml:"flags"`
	Goos   []string `yaml:"goos"`
	Goarch []string `yaml:"goarch"`
	Ignore []struct {
		Goos   string `yaml:"goos"`
		Goarch string `yaml:"goarch"`
	} `yaml:"ignore"`
}

// builds reports whether b builds goos/goarch.
func (b build) builds(goos, goarch string) bool {
	if !slices.Contains(b.Goos, goos) || !slices.Contains(b.Goarch, goarch) {
		return false
	}
	for _, ig := range b.Ignore {
		if ig.Goos == goos && ig.Goarch == goarch {
			return false
		}
	}
	return true
}

type dockerV2 struct {
	ID          string            `yaml:"id"`
	IDs         []string          `yaml:"ids"`
	Dockerfile  string            `yaml:"dockerfile"`
	Images      []string          `yaml:"images"`
	Tags        []string          `yaml:"tags"`
	Platforms   []string          `yaml:"platforms"`
	ExtraFiles  []string          `yaml:"extra_files"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// root is the repository's root, where .goreleaser.yaml is.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func loadConfig(t *testing.T) config {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root(t), ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c config
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	return c
}

// image returns the one image of the configuration and the build its
// binary comes from.
func image(t *testing.T, c config) (dockerV2, build) {
	t.Helper()
	if len(c.DockersV2) != 1 {
		t.Fatalf("dockers_v2 has %d images, want 1", len(c.DockersV2))
	}
	d := c.DockersV2[0]
	if len(d.IDs) != 1 {
		t.Fatalf("dockers_v2 ids = %q, want the one build of the binary", d.IDs)
	}
	for _, b := range c.Builds {
		if b.ID == d.IDs[0] {
			return d, b
		}
	}
	t.Fatalf("dockers_v2 ids = %q: no build has that id", d.IDs)
	return dockerV2{}, build{}
}

// spaceless drops the spaces of a template, so that "{{ .Version }}" and
// "{{.Version}}" compare equal.
func spaceless(s string) string { return strings.ReplaceAll(s, " ", "") }

func TestBuildsAreStatic(t *testing.T) {
	c := loadConfig(t)
	if c.Version != 2 {
		t.Errorf("version = %d, want 2", c.Version)
	}
	if len(c.Builds) == 0 {
		t.Fatal("no builds")
	}
	for _, b := range c.Builds {
		if !slices.Contains(b.Env, "CGO_ENABLED=0") {
			t.Errorf("build %q: env %q lacks CGO_ENABLED=0 (the image has no C library)", b.ID, b.Env)
		}
		if !slices.Contains(b.Flags, "-trimpath") {
			t.Errorf("build %q: flags %q lack -trimpath", b.ID, b.Flags)
		}
	}
}

func TestArchivesCarryReadmeAndLicense(t *testing.T) {
	c := loadConfig(t)
	dir := root(t)
	if len(c.Archive) == 0 {
		t.Fatal("no archives")
	}
	for i, a := range c.Archive {
		var matched []string
		for _, pattern := range a.Files {
			if before, _, ok := strings.Cut(pattern, "**"); ok {
				// goreleaser's own glob; filepath.Glob has no **.
				if fi, err := os.Stat(filepath.Join(dir, before)); err != nil || !fi.IsDir() {
					t.Errorf("archives[%d]: %q: no directory %q", i, pattern, before)
				}
				continue
			}
			m, err := filepath.Glob(filepath.Join(dir, pattern))
			if err != nil || len(m) == 0 {
				t.Errorf("archives[%d]: %q matches no file (%v)", i, pattern, err)
			}
			for _, f := range m {
				matched = append(matched, filepath.Base(f))
			}
		}
		for _, want := range []string{"README.md", "LICENSE"} {
			if !slices.Contains(matched, want) {
				t.Errorf("archives[%d]: files %q do not include %s", i, a.Files, want)
			}
		}
	}
}

func TestImageConfiguration(t *testing.T) {
	c := loadConfig(t)
	if len(c.Dockers) > 0 || len(c.DockerManifests) > 0 {
		t.Error("dockers and docker_manifests are being phased out: use dockers_v2 only")
	}
	d, b := image(t, c)
	if d.Dockerfile != "Dockerfile" {
		t.Errorf("dockerfile = %q, want the Dockerfile at the root", d.Dockerfile)
	}
	if !slices.Equal(d.Images, []string{wantImage}) {
		t.Errorf("images = %q, want %q", d.Images, wantImage)
	}
	if !slices.Equal(d.Platforms, wantPlatforms) {
		t.Errorf("platforms = %q, want %q", d.Platforms, wantPlatforms)
	}
	for _, p := range d.Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		if !b.builds(goos, goarch) {
			t.Errorf("platform %s: build %q does not build it", p, b.ID)
		}
	}
	var versioned, latest bool
	for _, tag := range d.Tags {
		tag = spaceless(tag)
		versioned = versioned || strings.Contains(tag, "{{.Tag}}") || strings.Contains(tag, "{{.Version}}")
		latest = latest || strings.Contains(tag, "latest")
	}
	if !versioned || !latest {
		t.Errorf("tags = %q, want the release's version and latest", d.Tags)
	}

	want := map[string]string{
		"org.opencontainers.image.source":   wantSource,
		"org.opencontainers.image.version":  "{{.Version}}",
		"org.opencontainers.image.revision": "{{.FullCommit}}",
		"org.opencontainers.image.licenses": wantLicense,
	}
	for key, value := range want {
		if got := spaceless(d.Labels[key]); got != value {
			t.Errorf("label %s = %q, want %q", key, d.Labels[key], value)
		}
		if got, ok := d.Annotations[key]; ok && spaceless(got) != value {
			t.Errorf("annotation %s = %q, want %q, as its label", key, got, value)
		}
	}
	license, err := os.ReadFile(filepath.Join(root(t), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(license), "Mozilla Public License, version 2.0") {
		t.Errorf("LICENSE is not the MPL 2.0 that the label %s says", wantLicense)
	}
	module, err := os.ReadFile(filepath.Join(root(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(module), "module "+strings.TrimPrefix(wantSource, "https://")+"\n") {
		t.Errorf("go.mod's module is not %s", wantSource)
	}
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

func parseDockerfile(text string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasPrefix(trimmed, "#") { // a comment inside a continuation
			continue
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(strings.TrimSpace(body) + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// flags splits the leading --flags off an instruction's arguments.
func flags(args string) (fl, rest []string) {
	fields := strings.Fields(args)
	for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
		fl, fields = append(fl, fields[0]), fields[1:]
	}
	return fl, fields
}

var targetPlatform = regexp.MustCompile(`^\$(TARGETPLATFORM|\{TARGETPLATFORM\})/`)

func TestDockerfile(t *testing.T) {
	c := loadConfig(t)
	d, b := image(t, c)
	data, err := os.ReadFile(filepath.Join(root(t), d.Dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	binary := b.Binary
	if binary == "" {
		binary = b.ID
	}

	var (
		froms         int
		user          string
		userLine      int
		workdir       string
		workdirLine   int
		argPlatform   bool
		binaryDest    string
		entrypoint    []string
		sawEntrypoint bool
	)
	for _, in := range parseDockerfile(string(data)) {
		switch in.cmd {
		case "FROM":
			froms++
			_, rest := flags(in.args)
			base, _, _ := strings.Cut(strings.Join(rest, " "), "@sha256:") // a pinned digest is fine
			if base != wantBase {
				t.Errorf("line %d: FROM %s, want %s (static: no C library, no shell)", in.line, in.args, wantBase)
			}
		case "RUN", "ADD", "ONBUILD", "SHELL":
			t.Errorf("line %d: %s: the image has no shell, and nothing may be added but the binary and extra files", in.line, in.cmd)
		case "ARG":
			if in.args == "TARGETPLATFORM" {
				argPlatform = true
			}
		case "COPY":
			fl, rest := flags(in.args)
			for _, f := range fl {
				if strings.HasPrefix(f, "--from") {
					t.Errorf("line %d: COPY %s: files from another image (a shell, for one)", in.line, f)
				}
			}
			if len(rest) != 2 {
				t.Errorf("line %d: COPY %s: want one source and a destination", in.line, in.args)
				continue
			}
			src, dst := rest[0], rest[1]
			if targetPlatform.MatchString(src) {
				if !argPlatform {
					t.Errorf("line %d: %s before ARG TARGETPLATFORM", in.line, src)
				}
				if got := targetPlatform.ReplaceAllString(src, ""); got != binary {
					t.Errorf("line %d: copies %s, but the build makes %s", in.line, got, binary)
					continue
				}
				binaryDest = dst
				if strings.HasSuffix(dst, "/") {
					binaryDest = dst + binary
				}
			} else if !slices.Contains(d.ExtraFiles, src) {
				t.Errorf("line %d: COPY %s: not in dockers_v2.extra_files, so not in the build context", in.line, src)
			}
		case "USER":
			user, userLine = in.args, in.line
		case "WORKDIR":
			workdir, workdirLine = in.args, in.line
		case "ENTRYPOINT":
			sawEntrypoint = true
			if err := json.Unmarshal([]byte(in.args), &entrypoint); err != nil {
				t.Errorf("line %d: ENTRYPOINT %s: not the exec form (a JSON array): the image has no shell", in.line, in.args)
			}
		}
	}
	if froms != 1 {
		t.Errorf("%d FROM instructions, want 1", froms)
	}

	// Numeric, so that Kubernetes' runAsNonRoot can check it.
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric user that is not root (65532, distroless's nonroot)", user)
	}

	if !filepath.IsAbs(workdir) || workdir == "/" {
		t.Errorf("WORKDIR %q: want a directory of its own", workdir)
	}
	if userLine == 0 || workdirLine < userLine {
		t.Errorf("WORKDIR (line %d) before USER (line %d): BuildKit creates it owned by root", workdirLine, userLine)
	}

	if binaryDest == "" {
		t.Fatalf("no COPY $TARGETPLATFORM/%s", binary)
	}
	if !sawEntrypoint || len(entrypoint) == 0 || entrypoint[0] != binaryDest {
		t.Errorf("ENTRYPOINT %q, want [%q] (the binary goreleaser built)", entrypoint, binaryDest)
	}
	for _, f := range d.ExtraFiles {
		if _, err := os.Stat(filepath.Join(root(t), f)); err != nil {
			t.Errorf("dockers_v2.extra_files: %v", err)
		}
	}
}

func TestParseDockerfile(t *testing.T) {
	got := parseDockerfile("# syntax=docker/dockerfile:1\nFROM a\n\nrun x \\\n  # note\n  y\nUSER 1:1\n")
	want := []instruction{{2, "FROM", "a"}, {4, "RUN", "x y"}, {7, "USER", "1:1"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// artifact is an entry of goreleaser's dist/artifacts.json.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
}

// TestSnapshotRelease makes a snapshot release for the host's platform
// only, with everything that needs more than goreleaser and Go skipped
// (the before hooks, which would tidy go.mod in the work tree; the image;
// signing; SBOMs), and checks its archive and binary.
func TestSnapshotRelease(t *testing.T) {
	goreleaser := os.Getenv("TFMIRROR_GORELEASER")
	if goreleaser == "" {
		if serverproc.Required() {
			t.Fatal("TFMIRROR_GORELEASER is not set: scripts/test builds goreleaser")
		}
		t.Skip("TFMIRROR_GORELEASER is not set (scripts/test builds goreleaser)")
	}
	dir := root(t)
	tmp := t.TempDir()
	dist := filepath.Join(tmp, "dist")

	data, err := os.ReadFile(filepath.Join(dir, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["dist"] = dist
	builds, _ := cfg["builds"].([]any)
	for _, b := range builds {
		b := b.(map[string]any)
		b["goos"] = []string{runtime.GOOS}
		b["goarch"] = []string{runtime.GOARCH}
		delete(b, "ignore")
	}
	data, err = yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(tmp, "goreleaser.yaml")
	if err := os.WriteFile(config, data, 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(t.Context(), goreleaser, "release", "--config", config,
		"--snapshot", "--clean", "--skip=before,docker,sign,sbom,publish")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goreleaser release --snapshot: %v\n%s", err, out)
	}

	var artifacts []artifact
	readJSON(t, filepath.Join(dist, "artifacts.json"), &artifacts)
	var meta struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}
	readJSON(t, filepath.Join(dist, "metadata.json"), &meta)

	var archives, binaries []artifact
	for _, a := range artifacts {
		if !filepath.IsAbs(a.Path) {
			a.Path = filepath.Join(dir, a.Path)
		}
		switch a.Type {
		case "Archive":
			archives = append(archives, a)
		case "Binary":
			binaries = append(binaries, a)
		}
	}
	if len(archives) != 1 || len(binaries) != 1 {
		t.Fatalf("%d archives and %d binaries, want one of each: %+v", len(archives), len(binaries), artifacts)
	}

	// The archive: the binary, README, LICENSE and the examples.
	entries := tarEntries(t, archives[0].Path)
	for _, want := range []string{binaries[0].Name, "README.md", "LICENSE", "examples/mirror.hcl"} {
		if !slices.Contains(entries, want) {
			t.Errorf("%s lacks %s; it has %q", archives[0].Name, want, entries)
		}
	}

	// The binary: what the Dockerfile copies (the build context holds
	// OS/ARCH/NAME), static, and it knows the release's version.
	_, b := image(t, loadConfig(t))
	if binaries[0].Name != b.Binary {
		t.Errorf("the binary is named %s, the Dockerfile copies %s", binaries[0].Name, b.Binary)
	}
	bin := binaries[0].Path
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a program interpreter: it is not static", bin)
			}
		}
		if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
			t.Errorf("%s needs the shared libraries %q (%v)", bin, libs, err)
		}
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("built with CGO_ENABLED=%q -trimpath=%q, want 0 and true", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	out, err := exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	if want := "tfmirror " + meta.Version + " (commit " + meta.Commit + ")\n"; meta.Version == "" || string(out) != want {
		t.Errorf("%s version printed %q, want %q", bin, out, want)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// tarEntries lists the regular files of a .tar.gz archive.
func tarEntries(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var names []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
		}
	}
}
