package sdk_test

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

func TestPartitionHoldOf(t *testing.T) {
	one := int32(1)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		held        int32
		user        *int32
		ok          bool
	}{
		{"no record", nil, 0, nil, false},
		{"held, user none", map[string]string{abi.AnnotationHeldPartition: "3"}, 3, nil, true},
		{"held and user", map[string]string{abi.AnnotationHeldPartition: "3", abi.AnnotationUserPartition: "1"}, 3, &one, true},
		{"user alone is no record", map[string]string{abi.AnnotationUserPartition: "1"}, 0, nil, false},
		{"held not a number", map[string]string{abi.AnnotationHeldPartition: "three"}, 0, nil, false},
		{"held negative", map[string]string{abi.AnnotationHeldPartition: "-1"}, 0, nil, false},
		{"held not canonical", map[string]string{abi.AnnotationHeldPartition: "03"}, 0, nil, false},
		{"held beyond int32", map[string]string{abi.AnnotationHeldPartition: "2147483648"}, 0, nil, false},
		{"user garbled", map[string]string{abi.AnnotationHeldPartition: "3", abi.AnnotationUserPartition: "x"}, 0, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := sdktest.StatefulSet("web", 3)
			set.Metadata.Annotations = tc.annotations
			held, user, ok := sdk.PartitionHoldOf(set)
			if held != tc.held || ok != tc.ok || (user == nil) != (tc.user == nil) || (user != nil && *user != *tc.user) {
				t.Errorf("PartitionHoldOf = %d, %v, %v; want %d, %v, %v", held, user, ok, tc.held, tc.user, tc.ok)
			}
		})
	}
	if _, _, ok := sdk.PartitionHoldOf(nil); ok {
		t.Error("a nil set has a record")
	}
}
