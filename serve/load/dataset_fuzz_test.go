package load

import (
	"testing"
)

// The fuzz targets feed every dataset decoder arbitrary bytes: it must return entries or an
// error, never panic, and every entry it returns must be sendable (lengths >= 1, times >= 0).

func checkEntries(t *testing.T, d *Dataset, err error) {
	if err != nil {
		return
	}
	if len(d.Entries) == 0 {
		t.Fatal("no entries and no error")
	}
	for i, e := range d.Entries {
		if e.InputTokens < 1 || e.OutputTokens < 1 || e.At < 0 {
			t.Fatalf("entry %d not sendable: %+v", i, e)
		}
		if i > 0 && d.Timed && e.At < d.Entries[i-1].At {
			t.Fatalf("entry %d out of time order", i)
		}
	}
}

func FuzzReadShareGPT(f *testing.F) {
	_, b := fixture(f, "sharegpt.json")
	f.Add(b)
	f.Add([]byte(`[{"conversations":[{"value":"aaaaaaaaaaaaaaaaaaaaa"},{"value":"bbbbbbbbbbbbbbbbbbbbbbbb"}]}]`))
	f.Add([]byte(`[{"conversations": null}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ReadShareGPT("f", data, 0)
		checkEntries(t, d, err)
	})
}

func FuzzReadBurstGPT(f *testing.F) {
	_, b := fixture(f, "burstgpt.csv")
	f.Add(b)
	f.Add([]byte("Request tokens,Response tokens\n1,2\n3.0,4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ReadBurstGPT("f", data)
		checkEntries(t, d, err)
	})
}

func FuzzReadMooncake(f *testing.F) {
	_, b := fixture(f, "mooncake.jsonl")
	f.Add(b)
	f.Add([]byte(`{"timestamp": 1.5, "input_length": 1, "output_length": 1, "hash_ids": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ReadMooncake("f", data)
		checkEntries(t, d, err)
	})
}

func FuzzReadAzure(f *testing.F) {
	_, b := fixture(f, "azure.csv")
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ReadAzure("f", data)
		checkEntries(t, d, err)
	})
}
