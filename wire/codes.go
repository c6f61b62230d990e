package wire

import "strconv"

// Code is a ZooKeeper result code (KeeperException.Code), carried in the err
// field of a reply header and in multi results. It is data, not a Go error.
type Code int32

// Result codes, with the numbers ZooKeeper uses on the wire.
const (
	CodeOK                           Code = 0
	CodeSystemError                  Code = -1
	CodeRuntimeInconsistency         Code = -2
	CodeDataInconsistency            Code = -3
	CodeConnectionLoss               Code = -4
	CodeMarshallingError             Code = -5
	CodeUnimplemented                Code = -6
	CodeOperationTimeout             Code = -7
	CodeBadArguments                 Code = -8
	CodeUnknownSession               Code = -12
	CodeNewConfigNoQuorum            Code = -13
	CodeReconfigInProgress           Code = -14
	CodeAPIError                     Code = -100
	CodeNoNode                       Code = -101
	CodeNoAuth                       Code = -102
	CodeBadVersion                   Code = -103
	CodeNoChildrenForEphemerals      Code = -108
	CodeNodeExists                   Code = -110
	CodeNotEmpty                     Code = -111
	CodeSessionExpired               Code = -112
	CodeInvalidCallback              Code = -113
	CodeInvalidACL                   Code = -114
	CodeAuthFailed                   Code = -115
	CodeClosing                      Code = -116
	CodeNothing                      Code = -117
	CodeSessionMoved                 Code = -118
	CodeNotReadOnly                  Code = -119
	CodeEphemeralOnLocalSession      Code = -120
	CodeNoWatcher                    Code = -121
	CodeRequestTimeout               Code = -122
	CodeReconfigDisabled             Code = -123
	CodeSessionClosedRequireSASLAuth Code = -124
	CodeQuotaExceeded                Code = -125
	CodeThrottledOp                  Code = -127
)

var codeNames = map[Code]string{
	CodeOK:                           "OK",
	CodeSystemError:                  "SYSTEMERROR",
	CodeRuntimeInconsistency:         "RUNTIMEINCONSISTENCY",
	CodeDataInconsistency:            "DATAINCONSISTENCY",
	CodeConnectionLoss:               "CONNECTIONLOSS",
	CodeMarshallingError:             "MARSHALLINGERROR",
	CodeUnimplemented:                "UNIMPLEMENTED",
	CodeOperationTimeout:             "OPERATIONTIMEOUT",
	CodeBadArguments:                 "BADARGUMENTS",
	CodeUnknownSession:               "UNKNOWNSESSION",
	CodeNewConfigNoQuorum:            "NEWCONFIGNOQUORUM",
	CodeReconfigInProgress:           "RECONFIGINPROGRESS",
	CodeAPIError:                     "APIERROR",
	CodeNoNode:                       "NONODE",
	CodeNoAuth:                       "NOAUTH",
	CodeBadVersion:                   "BADVERSION",
	CodeNoChildrenForEphemerals:      "NOCHILDRENFOREPHEMERALS",
	CodeNodeExists:                   "NODEEXISTS",
	CodeNotEmpty:                     "NOTEMPTY",
	CodeSessionExpired:               "SESSIONEXPIRED",
	CodeInvalidCallback:              "INVALIDCALLBACK",
	CodeInvalidACL:                   "INVALIDACL",
	CodeAuthFailed:                   "AUTHFAILED",
	CodeClosing:                      "CLOSING",
	CodeNothing:                      "NOTHING",
	CodeSessionMoved:                 "SESSIONMOVED",
	CodeNotReadOnly:                  "NOTREADONLY",
	CodeEphemeralOnLocalSession:      "EPHEMERALONLOCALSESSION",
	CodeNoWatcher:                    "NOWATCHER",
	CodeRequestTimeout:               "REQUESTTIMEOUT",
	CodeReconfigDisabled:             "RECONFIGDISABLED",
	CodeSessionClosedRequireSASLAuth: "SESSIONCLOSEDREQUIRESASLAUTH",
	CodeQuotaExceeded:                "QUOTAEXCEEDED",
	CodeThrottledOp:                  "THROTTLEDOP",
}

// String returns ZooKeeper's name for the code, as in KeeperException.Code.
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}
