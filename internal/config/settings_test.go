package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/mirror"
)

func TestSettingsBlock(t *testing.T) {
	m, err := config.Parse([]byte(`settings {
  retries             = 7
  connect_timeout     = "5s"
  header_timeout      = "2m"
  stall_timeout       = "0"
  max_archive_entries = 500
  max_unpacked_bytes  = 1048576
  speed_limit         = 2048
  speed_time          = "45s"
  max_archive_bytes   = 536870912
  max_module_depth    = 4
  max_modules         = 5000
  max_module_calls    = 250
}
`), "mirror.hcl")
	if err != nil {
		t.Fatal(err)
	}
	s := m.Settings
	if *s.Retries != 7 || *s.ConnectTimeout != 5*time.Second || *s.HeaderTimeout != 2*time.Minute || *s.StallTimeout != 0 ||
		*s.MaxArchiveEntries != 500 || *s.MaxUnpackedBytes != 1<<20 ||
		*s.SpeedLimit != 2048 || *s.SpeedTime != 45*time.Second || *s.MaxArchiveBytes != 512<<20 {
		t.Errorf("settings = %+v", s)
	}
	if got, want := s.ModuleTreeLimits(), (mirror.ModuleTreeLimits{MaxDepth: 4, MaxModules: 5000, MaxCalls: 250}); got != want {
		t.Errorf("module tree limits = %+v, want %+v", got, want)
	}
	if got := (config.Settings{}).ModuleTreeLimits(); got != mirror.DefaultModuleTreeLimits {
		t.Errorf("module tree limits without settings = %+v", got)
	}
	m, err = config.Parse([]byte("settings {\n  max_unpacked_bytes = \"4GiB\"\n  max_archive_bytes = \"500MB\"\n  speed_limit = \"1kB\"\n}\n"), "mirror.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if s := m.Settings; *s.MaxUnpackedBytes != 4<<30 || *s.MaxArchiveBytes != 500_000_000 || *s.SpeedLimit != 1000 {
		t.Errorf("sizes with units: %+v", s)
	}
	for src, want := range map[string]string{
		`settings { max_archive_bytes = "1 XB" }`: "mirror.hcl:1:32: Invalid max_archive_bytes: invalid size \"1 XB\"",
		`settings { retries = -1 }`:               "mirror.hcl:1:22: Invalid retries",
		`settings { stall_timeout = "soon" }`:     "mirror.hcl:1:28: Invalid stall_timeout",
		`settings { max_archive_entries = 0 }`:    "mirror.hcl:1:34: Invalid max_archive_entries",
		`settings { speed_limit = -1 }`:           "mirror.hcl:1:26: Invalid speed_limit",
		`settings { speed_time = "slowly" }`:      "mirror.hcl:1:25: Invalid speed_time",
		`settings { max_archive_bytes = -1 }`:     "mirror.hcl:1:32: Invalid max_archive_bytes",
		`settings { max_module_depth = 0 }`:       "mirror.hcl:1:31: Invalid max_module_depth",
		`settings { max_modules = -5 }`:           "mirror.hcl:1:26: Invalid max_modules",
		`settings { max_module_calls = "x" }`:     "mirror.hcl:1:32: Unsuitable value type",
		`settings { colour = 1 }`:                 "Unsupported argument",
		"settings {}\nsettings {}":                "mirror.hcl:2:1: Duplicate settings block",
	} {
		if _, err := config.Parse([]byte(src), "mirror.hcl"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

// The bounds of paginated listings come from the settings block; unset
// ones are the adapters' defaults (zero).
func TestListLimits(t *testing.T) {
	m, err := config.Parse([]byte(`settings {
  max_list_pages      = 50
  max_bucket_objects  = 2000000
  max_repository_tags = 300
}
`), "mirror.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Settings.ListLimits(), (settings.ListLimits{MaxPages: 50, MaxObjects: 2_000_000, MaxTags: 300}); got != want {
		t.Errorf("ListLimits = %+v, want %+v", got, want)
	}
	if got := (config.Settings{}).ListLimits(); got != (settings.ListLimits{}) {
		t.Errorf("ListLimits of no settings = %+v", got)
	}
	for src, want := range map[string]string{
		`settings { max_list_pages = 0 }`:      "mirror.hcl:1:29: Invalid max_list_pages",
		`settings { max_bucket_objects = -1 }`: "mirror.hcl:1:33: Invalid max_bucket_objects",
		`settings { max_repository_tags = 0 }`: "mirror.hcl:1:34: Invalid max_repository_tags",
	} {
		if _, err := config.Parse([]byte(src), "mirror.hcl"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}
