package nftwire

// Message types and attributes of include/uapi/linux/netfilter/nf_tables.h
// that this package uses; golang.org/x/sys/unix names only some of them.
const (
	subsysNFTables = 10 // NFNL_SUBSYS_NFTABLES
	msgBatchBegin  = 0x10
	msgBatchEnd    = 0x11

	MsgNewTable    = 0
	MsgGetTable    = 1
	MsgDelTable    = 2
	MsgNewChain    = 3
	MsgGetChain    = 4
	MsgDelChain    = 5
	MsgNewRule     = 6
	MsgGetRule     = 7
	MsgDelRule     = 8
	MsgNewSet      = 9
	MsgGetSet      = 10
	MsgDelSet      = 11
	MsgNewSetElem  = 12
	MsgGetSetElem  = 13
	MsgDelSetElem  = 14
	MsgNewGen      = 15
	MsgGetGen      = 16
	MsgNewObj      = 18
	MsgGetObj      = 19
	MsgDelObj      = 20
	MsgNewFlowtab  = 22
	MsgGetFlowtab  = 23
	MsgDelFlowtab  = 24
	nfnetlinkV0    = 0
	nftaListElem   = 1
	nftaExprName   = 1
	nftaExprData   = 2
	nftaDataValue  = 1
	nftaDataVerdic = 2

	nftaTableName     = 1
	nftaTableFlags    = 2
	nftaTableUse      = 3
	nftaTableHandle   = 4
	nftaChainTable    = 1
	nftaChainHandle   = 2
	nftaChainName     = 3
	nftaChainHook     = 4
	nftaChainPolicy   = 5
	nftaChainUse      = 6
	nftaChainType     = 7
	nftaChainCounters = 8
	nftaChainFlags    = 10
	nftaHookHooknum   = 1
	nftaHookPriority  = 2
	nftaHookDev       = 3

	nftaRuleTable    = 1
	nftaRuleChain    = 2
	nftaRuleHandle   = 3
	nftaRuleExprs    = 4
	nftaRuleCompat   = 5
	nftaRulePosition = 6
	nftaRuleUserdata = 7

	nftaSetTable       = 1
	nftaSetName        = 2
	nftaSetFlags       = 3
	nftaSetKeyType     = 4
	nftaSetKeyLen      = 5
	nftaSetDataType    = 6
	nftaSetDataLen     = 7
	nftaSetPolicy      = 8
	nftaSetDesc        = 9
	nftaSetDescSize    = 1 // NFTA_SET_DESC_SIZE, inside nftaSetDesc
	nftaSetID          = 10
	nftaSetTimeout     = 11
	nftaSetGCInterval  = 12
	nftaSetUserdata    = 13
	nftaSetPad         = 14
	nftaSetObjType     = 15
	nftaSetHandle      = 16
	nftaSetExpr        = 17
	nftaSetExpressions = 18

	nftaSetElemKey         = 1
	nftaSetElemData        = 2
	nftaSetElemFlags       = 3
	nftaSetElemTimeout     = 4
	nftaSetElemExpiration  = 5
	nftaSetElemUserdata    = 6
	nftaSetElemExpr        = 7
	nftaSetElemPad         = 8
	nftaSetElemObjref      = 9
	nftaSetElemKeyEnd      = 10
	nftaSetElemExpressions = 11

	nftaSetElemListTable = 1
	nftaSetElemListSet   = 2
	nftaSetElemListElems = 3
	nftaSetElemListSetID = 4

	nftaObjTable    = 1
	nftaObjName     = 2
	nftaObjType     = 3
	nftaObjData     = 4
	nftaObjUse      = 5
	nftaObjHandle   = 6
	nftaObjPad      = 7
	nftaObjUserdata = 8

	nftaGenID = 1

	// Set flags.
	SetAnonymous = 0x1
	SetConstant  = 0x2
	SetInterval  = 0x4
	SetMap       = 0x8
	SetTimeout   = 0x10
	SetEval      = 0x20
	SetObject    = 0x40
	SetConcat    = 0x80

	// ElemIntervalEnd is NFT_SET_ELEM_INTERVAL_END.
	ElemIntervalEnd = 0x1
	// ElemCatchall is NFT_SET_ELEM_CATCHALL: nft's `*`, an element
	// without a key.
	ElemCatchall = 0x2

	// Netlink header flags.
	flagRequest = 0x1
	flagAck     = 0x4
	flagDump    = 0x300
	flagReplace = 0x100
	flagExcl    = 0x200
	flagCreate  = 0x400
	flagAppend  = 0x800
)
