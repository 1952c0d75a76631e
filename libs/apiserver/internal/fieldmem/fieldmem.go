// Package fieldmem is the library's one use of unsafe: it reads a value's
// fields at offsets found once by reflection, compares strings by where
// their bytes lie and makes a string of bytes that are never written again.
//
// Why: serving a handler's Response by reflection moves it to the heap and
// costs more than the rest of the library's request path (BenchmarkRead
// against BenchmarkReadReflect); the metrics' route cache hashes no string
// when it can compare gin's route strings by address (BenchmarkSameData).
// Callers find offsets with reflect.StructField.Offset and pass a field's
// own reflect.Kind; everything here is read only.
package fieldmem

import (
	"reflect"
	"strconv"
	"unsafe"
)

// Ptr is the address of a value whose fields are read. The zero Ptr is nil.
type Ptr struct{ p unsafe.Pointer }

// Of is the address of *v. v stays where it is: the compiler keeps it on
// the stack while the Ptr does not escape.
func Of[T any](v *T) Ptr { return Ptr{unsafe.Pointer(v)} }

// At is the address off bytes into p (a field's reflect.StructField.Offset).
func (p Ptr) At(off uintptr) Ptr { return Ptr{unsafe.Add(p.p, off)} }

// Get reads the T at p. T must be the type of the field at p.
func Get[T any](p Ptr) T { return *(*T)(p.p) }

// Value is the addressable reflect.Value of type t at p.
func (p Ptr) Value(t reflect.Type) reflect.Value { return reflect.NewAt(t, p.p).Elem() }

// Text formats the string or integer of kind k at p, "" for a zero value.
// int and uint are read at their own size: 4 bytes on 32-bit targets.
func (p Ptr) Text(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return *(*string)(p.p)
	case reflect.Int:
		return signed(int64(*(*int)(p.p)))
	case reflect.Int64:
		return signed(*(*int64)(p.p))
	case reflect.Int32:
		return signed(int64(*(*int32)(p.p)))
	case reflect.Int16:
		return signed(int64(*(*int16)(p.p)))
	case reflect.Int8:
		return signed(int64(*(*int8)(p.p)))
	case reflect.Uint:
		return unsigned(uint64(*(*uint)(p.p)))
	case reflect.Uint64:
		return unsigned(*(*uint64)(p.p))
	case reflect.Uint32:
		return unsigned(uint64(*(*uint32)(p.p)))
	case reflect.Uint16:
		return unsigned(uint64(*(*uint16)(p.p)))
	case reflect.Uint8:
		return unsigned(uint64(*(*uint8)(p.p)))
	}
	panic("fieldmem: Text of a " + k.String())
}

// TextKind reports whether Text can format a field of kind k.
func TextKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Int, reflect.Int64, reflect.Int32, reflect.Int16, reflect.Int8,
		reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		return true
	}
	return false
}

func signed(v int64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatInt(v, 10)
}

func unsigned(v uint64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatUint(v, 10)
}

// DataAddr is where s's bytes lie, 0 for an empty string (whose data
// pointer may be anything).
func DataAddr(s string) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.StringData(s)))
}

// SameData reports whether a and b are the same bytes in memory: the same
// length at the same address. Equal strings stored twice are not the same.
func SameData(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

// String is b as a string without a copy. The caller never writes b again.
func String(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
