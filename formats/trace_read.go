package formats

// ParseForeignTrace reads data as one of the public trace formats plan imports as they are,
// detected by their content whatever the file's name: the Azure LLM trace CSV (by its
// header, IsAzureLLMTrace) or a Mooncake JSONL trace (by its fields, IsMooncakeTrace; 512-
// token hash blocks). ok is false when data is neither (a Trace document, or not a trace):
// the caller decodes it as a document then.
func ParseForeignTrace(name string, data []byte) (t *Trace, ok bool, err error) {
	switch {
	case IsAzureLLMTrace(data):
		t, err = ParseAzureLLMTrace(name, data)
	case IsMooncakeTrace(data):
		t, err = ParseMooncakeTrace(name, data, MooncakeBlockTokens)
	default:
		return nil, false, nil
	}
	return t, true, err
}
