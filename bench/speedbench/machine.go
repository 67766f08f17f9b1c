package speedbench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// cpuModel is /proc/cpuinfo's first "model name" ("" where there is none).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// dataCaches lists the first CPU's data and unified caches by level from sysfs, as "L1d 32K,
// L2 512K, L3 32768K" ("" where sysfs has none): the simulator rows' 16× side is a working
// set that fits one machine's L2 and not another's.
func dataCaches() string {
	return cachesIn("/sys/devices/system/cpu/cpu0/cache")
}

func cachesIn(dir string) string {
	idx, _ := filepath.Glob(filepath.Join(dir, "index[0-9]*"))
	var parts []string
	for _, d := range idx {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(d, name))
			return strings.TrimSpace(string(b))
		}
		level, kind, size := read("level"), read("type"), read("size")
		if level == "" || size == "" || kind == "Instruction" {
			continue
		}
		name := "L" + level
		if kind == "Data" {
			name += "d"
		}
		parts = append(parts, fmt.Sprintf("%s %s", name, size))
	}
	return strings.Join(parts, ", ")
}
