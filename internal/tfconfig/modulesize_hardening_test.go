package tfconfig

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// The configuration files of a fetched module package are outside input:
// one larger than hclsafe.MaxModuleFileSize, and one that takes the files
// read past hclsafe.MaxModuleConfigSize, are refused before they are
// parsed, naming the file, at once and without the memory HCL would take
// (gigabytes for a 15 MiB file).
func TestModuleCallsBoundsWhatTheyRead(t *testing.T) {
	call := `module "net" {
  source  = "acme/net/aws"
  version = "1.0.0"
}
`
	dense := "locals {\n  x = [" + strings.Repeat("1,", 15<<19) + "1]\n}\n" // 15 MiB
	filler := strings.Repeat("# "+strings.Repeat("x", 1021)+"\n", 900)      // 900 KiB of comments

	tests := []struct {
		name  string
		files map[string]string
		want  string
		read  bool // files are read and parsed before the refusal
	}{
		{"one huge file", map[string]string{"main.tf": call, "huge.tf": dense}, "huge.tf: File too large: It holds 15728661 bytes, more than 1 MiB, the most tfmirror reads from one configuration file of a fetched module", false},
		{"a huge file of a local module", map[string]string{
			"main.tf": call + `module "local" { source = "./modules/x" }`, "modules/x/big.tf.json": `{"locals":{"x":[` + strings.Repeat("1,", 1<<20) + `1]}}`,
		}, "modules/x/big.tf.json: File too large", false},
		{"files too large together", map[string]string{
			"main.tf": call, "a.tf": filler, "b.tf": filler, "c.tf": filler, "d.tf": filler, "e.tf": filler,
		}, "e.tf: Module configuration too large: With this file, the configuration files read from the module package hold more than 4 MiB", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, prefixed("pkg/", tc.files))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, _, err := ModuleCalls(root+"/pkg", "")
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.read {
				return // a.tf to d.tf were read: their time and memory are not the refusal's
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Errorf("reading the calls allocated %d MiB", alloc>>20)
			}
			if took > 2*time.Second {
				t.Errorf("took %s", took)
			}
		})
	}

	// A module at the limits is read.
	root := writeTree(t, prefixed("pkg/", map[string]string{"main.tf": call, "a.tf": filler, "b.tf": filler, "c.tf": filler, "d.tf": filler}))
	calls, _, err := ModuleCalls(root+"/pkg", "")
	if err != nil || len(calls) != 1 {
		t.Errorf("calls %v, err %v", calls, err)
	}
}

func prefixed(prefix string, files map[string]string) map[string]string {
	out := make(map[string]string, len(files))
	for name, body := range files {
		out[prefix+name] = body
	}
	return out
}
