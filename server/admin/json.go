package admin

import (
	"bytes"
	"encoding/json"

	"github.com/zkraft/zkraft/server"
)

// object is a JSON object whose keys keep their order, as ZooKeeper's
// Jackson output keeps its commands' insertion order.
type object []field

type field struct {
	key   string
	value any
}

// add appends a key; it returns the object for chaining.
func (o *object) add(key string, value any) *object {
	*o = append(*o, field{key, value})
	return o
}

// MarshalJSON writes the fields in order; a float64 is written as Java
// prints a double ("0.0", "2.3333"), as ZooKeeper's averages are.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		if v, ok := f.value.(float64); ok {
			b.WriteString(server.JavaDouble(v))
			continue
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
