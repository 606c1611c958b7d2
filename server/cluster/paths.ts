// Where nodes and the control plane meet on the wire: the node channel's path on the API port,
// and the path a node serves VLESS over WebSocket on (links of sessions placed on a node name it).
export const NODE_CHANNEL_PATH = '/v2/node/channel';
export const NODE_WS_PATH = '/vless';
