package abi

// FieldShape is the shape abi's tables give the field at path of kind
// ("string", "map", "object", "list of objects", "scalar"), "" for none:
// what a test holds to the wire types.
func FieldShape(kind, path string) string {
	steps, err := ParseFieldPath(path)
	if err != nil {
		return ""
	}
	fs := projectionKinds[kind]
	var f *projectionField
	for _, s := range steps {
		f = nil
		for i := range fs {
			if fs[i].name == s.Name {
				f = &fs[i]
			}
		}
		if f == nil {
			return ""
		}
		fs = f.sub
	}
	if f == nil {
		return ""
	}
	return f.shape.String()
}
