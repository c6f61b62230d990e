package wire

// RequestFor returns a fresh zero request record for a client opcode, to
// decode a request body into. For the opcodes whose request has no body
// (ping, closeSession, whoAmI) it returns (nil, true); for unknown opcodes
// and the internal txn types (notification, createSession, error) it returns
// (nil, false). Check (13) is meant for multi, but ZooKeeper 3.8 also
// accepts it alone, so RequestFor knows it.
func RequestFor(op Op) (rec Record, ok bool) {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}, true
	case OpCreateTTL:
		return &CreateTTLRequest{}, true
	case OpDelete:
		return &DeleteRequest{}, true
	case OpCheck:
		return &CheckVersionRequest{}, true
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		return &PathWatchRequest{}, true
	case OpGetACL, OpSync, OpDeleteContainer, OpGetEphemerals, OpGetAllChildrenNumber:
		return &PathRequest{}, true
	case OpSetData:
		return &SetDataRequest{}, true
	case OpSetACL:
		return &SetACLRequest{}, true
	case OpMulti, OpMultiRead:
		return &MultiRequest{}, true
	case OpReconfig:
		return &ReconfigRequest{}, true
	case OpCheckWatches, OpRemoveWatches:
		return &RemoveWatchesRequest{}, true
	case OpAddWatch:
		return &AddWatchRequest{}, true
	case OpAuth:
		return &AuthPacket{}, true
	case OpSetWatches:
		return &SetWatches{}, true
	case OpSetWatches2:
		return &SetWatches2{}, true
	case OpSASL:
		return &SASLRequest{}, true
	case OpPing, OpCloseSession, OpWhoAmI:
		return nil, true
	}
	return nil, false
}

// Requests holds a record of each of the commonest requests (create,
// setData, delete, check, multi, and the reads exists, getData,
// getChildren), for whoever decodes one request at a time: a fresh record
// handed on as a Record goes to the heap, one allocation per request. The
// zero value is ready to use; it must not be shared between goroutines.
type Requests struct {
	create    CreateRequest
	setData   SetDataRequest
	delete    DeleteRequest
	check     CheckVersionRequest
	multi     MultiRequest
	pathWatch PathWatchRequest
	dec       Decoder // DecodeAliasing's, kept here so that it does not go to the heap
}

// For is RequestFor, but for the commonest opcodes it returns the set's own
// record, zeroed, which stays valid until the next call to For or Clear.
// What a decoded record holds (paths, data, ACLs) is freshly allocated as
// always, so it may be kept; the record itself may not.
func (q *Requests) For(op Op) (rec Record, ok bool) {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		q.create = CreateRequest{}
		return &q.create, true
	case OpSetData:
		q.setData = SetDataRequest{}
		return &q.setData, true
	case OpDelete:
		q.delete = DeleteRequest{}
		return &q.delete, true
	case OpCheck:
		q.check = CheckVersionRequest{}
		return &q.check, true
	case OpMulti, OpMultiRead:
		q.multi = MultiRequest{}
		return &q.multi, true
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		q.pathWatch = PathWatchRequest{}
		return &q.pathWatch, true
	}
	return RequestFor(op)
}

// Clear zeroes the records, so that they keep nothing they pointed to alive.
func (q *Requests) Clear() { *q = Requests{} }

// DecodeAliasing decodes src into rec (a request record: For's or
// RequestFor's) as rec.Decode does, except that the jute buffers it reads
// (data, tokens, passwords) alias src instead of being copied: for a caller
// done with the record before src changes, that copies what it keeps.
// Strings are still copied.
func (q *Requests) DecodeAliasing(rec Record, src []byte) (int, error) {
	r, ok := rec.(interface{ decode(*Decoder) })
	if !ok {
		return rec.Decode(src)
	}
	q.dec = Decoder{buf: src, alias: true}
	r.decode(&q.dec)
	n, err := q.dec.off, q.dec.err
	q.dec = Decoder{}
	return n, err
}

// ResponseFor returns a fresh zero record for the body of a successful
// (err 0) reply to a client opcode. For the opcodes whose reply is the
// header alone it returns (nil, true); it returns (nil, false) for the
// opcodes RequestFor rejects.
func ResponseFor(op Op) (rec Record, ok bool) {
	switch op {
	case OpCreate:
		return &CreateResponse{}, true
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		return &Create2Response{}, true
	case OpExists, OpSetData, OpSetACL:
		return &StatResponse{}, true
	case OpGetData, OpReconfig:
		return &GetDataResponse{}, true
	case OpGetACL:
		return &GetACLResponse{}, true
	case OpGetChildren, OpGetEphemerals:
		return &GetChildrenResponse{}, true
	case OpGetChildren2:
		return &GetChildren2Response{}, true
	case OpSync:
		return &SyncResponse{}, true
	case OpGetAllChildrenNumber:
		return &GetAllChildrenNumberResponse{}, true
	case OpAddWatch:
		return &ErrorResponse{}, true
	case OpWhoAmI:
		return &WhoAmIResponse{}, true
	case OpSASL:
		return &SASLResponse{}, true
	case OpMulti, OpMultiRead:
		return &MultiResponse{}, true
	case OpDelete, OpCheck, OpPing, OpCheckWatches, OpRemoveWatches, OpDeleteContainer,
		OpAuth, OpSetWatches, OpSetWatches2, OpCloseSession:
		return nil, true
	}
	return nil, false
}

// Compile-time checks that every record satisfies Record.
var (
	_ Record = (*CreateRequest)(nil)
	_ Record = (*CreateTTLRequest)(nil)
	_ Record = (*DeleteRequest)(nil)
	_ Record = (*CheckVersionRequest)(nil)
	_ Record = (*PathWatchRequest)(nil)
	_ Record = (*PathRequest)(nil)
	_ Record = (*SetDataRequest)(nil)
	_ Record = (*SetACLRequest)(nil)
	_ Record = (*ReconfigRequest)(nil)
	_ Record = (*RemoveWatchesRequest)(nil)
	_ Record = (*AddWatchRequest)(nil)
	_ Record = (*AuthPacket)(nil)
	_ Record = (*SetWatches)(nil)
	_ Record = (*SetWatches2)(nil)
	_ Record = (*SASLRequest)(nil)
	_ Record = (*MultiRequest)(nil)
	_ Record = (*MultiHeader)(nil)
	_ Record = (*MultiResult)(nil)
	_ Record = (*CreateResponse)(nil)
	_ Record = (*Create2Response)(nil)
	_ Record = (*StatResponse)(nil)
	_ Record = (*GetDataResponse)(nil)
	_ Record = (*GetACLResponse)(nil)
	_ Record = (*GetChildrenResponse)(nil)
	_ Record = (*GetChildren2Response)(nil)
	_ Record = (*SyncResponse)(nil)
	_ Record = (*GetAllChildrenNumberResponse)(nil)
	_ Record = (*ErrorResponse)(nil)
	_ Record = (*ClientInfo)(nil)
	_ Record = (*WhoAmIResponse)(nil)
	_ Record = (*SASLResponse)(nil)
	_ Record = (*MultiResponse)(nil)
)
