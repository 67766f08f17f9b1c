package main

import (
	"fmt"
	"regexp"
	"strings"
)

// memoryField is the instance field of highs.wasm's one linear memory: wasm2c
// names it after the memory's export, which the pinned build minifies to "u"
// (abi.go's table checks the export names).
const memoryField = "w2c_u"

var (
	// DEFINE_LOAD(i32_load, u32, u32, u32) and DEFINE_STORE(i32_store, u32, u32).
	accessorRe = regexp.MustCompile(`^DEFINE_(LOAD|STORE)\((\w+), ([^)]*)\)$`)
	// wasm2c's forced read after a load, in both byte orders' DEFINE_LOAD.
	forceReadRe = regexp.MustCompile(`^(\s*)wasm_asm\("" ::"r"\(result\)\);(\s*)\\$`)
	// A line that may call a function: an internal one gets `instance`, an
	// import its instance (instance->Z_a_instance), an indirect call goes
	// through CALL_INDIRECT; memory.grow would be wasm_rt_grow_memory. `instance`
	// followed by "->" is a field access, which calls nothing.
	callRe = regexp.MustCompile(`\binstance\b(?:[^-]|$)|instance->Z_a_instance|CALL_INDIRECT|grow_memory`)
	// The one shape of such a line that wasm2c 1.0.32 writes: a statement of
	// its own, the call's result (if any) assigned to a local.
	callStmtRe = regexp.MustCompile(`^\s*(?:w2c_\w+ = )?(?:w2c_\w+\(instance\b|CALL_INDIRECT\(|\(\*Z_\w+\)\(instance->Z_a_instance\b|wasm_rt_grow_memory\()[^;]*\);$`)
)

// rewriteCommon edits wasm2c's helpers (the lines that become common.h): the
// forced read after a load becomes FORCE_READ_<type> (see prelude), and
// wasm_fabs and wasm_fabsf become fabs and fabsf. wasm2c tests for NaN first
// and then clears the sign bit itself, which is exactly what fabs does to a
// NaN (IEEE 754-2019 §5.5.1: abs changes only the sign bit; gcc emits an and
// with a mask for both), so the results are bit for bit the same without
// the compare and branch on every |x| of the simplex's ratio tests. It
// returns the accessors (DEFINE_LOAD and DEFINE_STORE instantiations) too.
func rewriteCommon(lines []string) ([]string, []string, error) {
	var out, accessors []string
	reads, fabs := 0, 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := forceReadRe.FindStringSubmatch(l); m != nil {
			out = append(out, m[1]+"FORCE_READ_##t1(result);"+m[2]+`\`)
			reads++
			continue
		}
		if l == "static double wasm_fabs(double x) {" || l == "static float wasm_fabsf(float x) {" {
			j := i + 1
			for j < len(lines) && lines[j] != "}" {
				j++
			}
			if j == len(lines) {
				return nil, nil, fmt.Errorf("unexpected wasm2c output: %q never closed", l)
			}
			fn := "fabs"
			if strings.Contains(l, "fabsf") {
				fn = "fabsf"
			}
			out = append(out, l, "  return "+fn+"(x);", "}")
			i = j
			fabs++
			continue
		}
		if m := accessorRe.FindStringSubmatch(l); m != nil {
			accessors = append(accessors, fmt.Sprintf("DEFINE_%s_B(%s, %s)", m[1], m[2], m[3]))
		}
		out = append(out, l)
	}
	if reads == 0 || fabs != 2 || len(accessors) == 0 {
		return nil, nil, fmt.Errorf("unexpected wasm2c output: %d forced reads, %d fabs helpers, %d accessors", reads, fabs, len(accessors))
	}
	return out, accessors, nil
}

// accessRe matches a call of one of the accessors on the instance's memory.
func accessRe(accessors []string) *regexp.Regexp {
	names := make([]string, len(accessors))
	for i, a := range accessors {
		names[i] = strings.SplitN(strings.SplitN(a, "(", 2)[1], ",", 2)[0]
	}
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\(&instance->` + memoryField + `, `)
}

// cacheBase rewrites one function definition (guard pages only) so that its
// loads and stores address memory from a local copy of the memory's base
// pointer, w2c_base, instead of instance->w2c_u.data. Every wasm store is a
// char-typed store as far as the C compiler knows (memcpy), which may alias
// the instance's fields, so gcc reloaded the base from the instance after
// every store (in the simplex's scatter loops, one extra load in the address
// chain of each access); a local whose address is never taken cannot be
// stored to through memory. The base changes only when memory grows, which
// only a call can do (emscripten_resize_heap, an import; memory.grow): the
// copy is refreshed after every line that calls, and a calling line of any
// other shape than wasm2c's one statement per call is refused rather than
// guessed at. It returns the rewritten lines and how many accesses changed.
func cacheBase(def []string, access *regexp.Regexp) ([]string, int, error) {
	const reload = "w2c_base = instance->" + memoryField + ".data;"
	out := make([]string, 0, len(def)+8)
	out = append(out, def[0])
	n, prologues := 0, 0
	for _, l := range def[1:] {
		r := access.ReplaceAllString(l, "${1}_b(w2c_base, ")
		if r != l {
			n++
		}
		switch {
		case strings.TrimSpace(r) == "FUNC_PROLOGUE;":
			out = append(out, r, "  u8* "+reload)
			prologues++
		case callRe.MatchString(r):
			if !callStmtRe.MatchString(r) {
				return nil, 0, fmt.Errorf("unexpected wasm2c output: a call in %q", strings.TrimSpace(r))
			}
			out = append(out, r+" "+reload)
		default:
			out = append(out, r)
		}
	}
	if prologues != 1 {
		return nil, 0, fmt.Errorf("unexpected wasm2c output: %d FUNC_PROLOGUE in %q", prologues, def[0])
	}
	return out, n, nil
}
