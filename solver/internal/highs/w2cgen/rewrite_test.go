package main

import (
	"strings"
	"testing"
)

// commonLines is a cut-down common.h in wasm2c 1.0.32's layout.
var commonLines = []string{
	`#define DEFINE_LOAD(name, t1, t2, t3)                      \`,
	`  static inline t3 name(wasm_rt_memory_t* mem, u64 addr) { \`,
	`    MEMCHECK(mem, addr, t1);                               \`,
	`    t1 result;                                             \`,
	`    wasm_rt_memcpy(&result, &mem->data[addr], sizeof(t1)); \`,
	`    wasm_asm("" ::"r"(result));                            \`,
	`    return (t3)(t2)result;                                 \`,
	`  }`,
	`DEFINE_LOAD(i32_load, u32, u32, u32)`,
	`DEFINE_LOAD(f64_load, f64, f64, f64)`,
	`DEFINE_STORE(f64_store, f64, f64)`,
	`static float wasm_fabsf(float x) {`,
	`  if (UNLIKELY(isnan(x))) {`,
	`    return x;`,
	`  }`,
	`  return fabsf(x);`,
	`}`,
	`static double wasm_fabs(double x) {`,
	`  if (UNLIKELY(isnan(x))) {`,
	`    return x;`,
	`  }`,
	`  return fabs(x);`,
	`}`,
}

func TestRewriteCommon(t *testing.T) {
	out, accessors, err := rewriteCommon(commonLines)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(out, "\n")
	for _, tc := range []struct {
		name string
		want bool
		s    string
	}{
		{"forced read per type", true, `    FORCE_READ_##t1(result);                            \`},
		{"no forced read through a general register", false, `wasm_asm("" ::"r"(result))`},
		{"fabsf without the NaN branch", true, "static float wasm_fabsf(float x) {\n  return fabsf(x);\n}"},
		{"fabs without the NaN branch", true, "static double wasm_fabs(double x) {\n  return fabs(x);\n}"},
		{"no NaN test left", false, "isnan"},
		{"the accessors stay", true, "DEFINE_LOAD(f64_load, f64, f64, f64)\nDEFINE_STORE(f64_store, f64, f64)"},
	} {
		if strings.Contains(text, tc.s) != tc.want {
			t.Errorf("%s: contains %q = %v, want %v:\n%s", tc.name, tc.s, !tc.want, tc.want, text)
		}
	}
	want := []string{"DEFINE_LOAD_B(i32_load, u32, u32, u32)", "DEFINE_LOAD_B(f64_load, f64, f64, f64)", "DEFINE_STORE_B(f64_store, f64, f64)"}
	if strings.Join(accessors, ";") != strings.Join(want, ";") {
		t.Errorf("accessors %q, want %q", accessors, want)
	}
	// Output of another wasm2c (no forced read, no fabs helpers) is refused.
	if _, _, err := rewriteCommon(commonLines[8:11]); err == nil {
		t.Error("rewriteCommon accepted helpers without a forced read or fabs")
	}
}

func TestCacheBase(t *testing.T) {
	access := accessRe([]string{"DEFINE_LOAD_B(i32_load, u32, u32, u32)", "DEFINE_STORE_B(f64_store, f64, f64)"})
	const reload = " w2c_base = instance->w2c_u.data;"
	head := "u32 w2c_f7(Z_highs_instance_t* instance, u32 w2c_p0) {"
	for _, tc := range []struct {
		name    string
		body    []string
		want    []string // the lines after the header
		wantN   int
		wantErr string
	}{
		{
			name: "accesses, a direct call, an import and an indirect call",
			body: []string{
				"  u32 w2c_l1 = 0;",
				"  FUNC_PROLOGUE;",
				"  w2c_i0 = i32_load(&instance->w2c_u, (u64)(w2c_p0) + 4u);",
				"  w2c_i0 = w2c_f9(instance, w2c_i0);",
				"  f64_store(&instance->w2c_u, (u64)(w2c_i0), w2c_d1);",
				"  w2c_d0 = (*Z_aZ_c)(instance->Z_a_instance);",
				"  CALL_INDIRECT(instance->w2c_sc, void (*)(void*), 1, w2c_i2, instance->w2c_sc.data[w2c_i2].module_instance);",
				"  instance->w2c_g0 = w2c_i0;",
				"  memory_fill(&instance->w2c_u, w2c_i0, 0, w2c_i1);",
				"  return w2c_i0;",
				"}",
			},
			want: []string{
				"  u32 w2c_l1 = 0;",
				"  FUNC_PROLOGUE;",
				"  u8* w2c_base = instance->w2c_u.data;",
				"  w2c_i0 = i32_load_b(w2c_base, (u64)(w2c_p0) + 4u);",
				"  w2c_i0 = w2c_f9(instance, w2c_i0);" + reload,
				"  f64_store_b(w2c_base, (u64)(w2c_i0), w2c_d1);",
				"  w2c_d0 = (*Z_aZ_c)(instance->Z_a_instance);" + reload,
				"  CALL_INDIRECT(instance->w2c_sc, void (*)(void*), 1, w2c_i2, instance->w2c_sc.data[w2c_i2].module_instance);" + reload,
				"  instance->w2c_g0 = w2c_i0;",
				"  memory_fill(&instance->w2c_u, w2c_i0, 0, w2c_i1);",
				"  return w2c_i0;",
				"}",
			},
			wantN: 2,
		},
		{
			name:    "a call inside a condition",
			body:    []string{"  FUNC_PROLOGUE;", "  if (w2c_f9(instance, w2c_i0)) {goto w2c_B1;}", "}"},
			wantErr: "a call in",
		},
		{
			name: "memory.grow",
			body: []string{"  FUNC_PROLOGUE;", "  w2c_i0 = wasm_rt_grow_memory(&instance->w2c_u, w2c_i0);", "}"},
			want: []string{"  FUNC_PROLOGUE;", "  u8* w2c_base = instance->w2c_u.data;", "  w2c_i0 = wasm_rt_grow_memory(&instance->w2c_u, w2c_i0);" + reload, "}"},
		},
		{
			name:    "two statements on a line",
			body:    []string{"  FUNC_PROLOGUE;", "  w2c_i0 = w2c_f9(instance, w2c_i0); w2c_i1 = i32_load(&instance->w2c_u, (u64)(w2c_i0));", "}"},
			wantErr: "a call in",
		},
		{
			name:    "no prologue",
			body:    []string{"  return w2c_p0;", "}"},
			wantErr: "0 FUNC_PROLOGUE",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, n, err := cacheBase(append([]string{head}, tc.body...), access)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out[0] != head || strings.Join(out[1:], "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(out[1:], "\n"), strings.Join(tc.want, "\n"))
			}
			if n != tc.wantN {
				t.Errorf("%d accesses rewritten, want %d", n, tc.wantN)
			}
		})
	}
}
