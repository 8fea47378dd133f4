// The "capacity" field of the admin tag views: per kind of tag, the service's (capacity-json.ts).
export { capacityJson } from '../../service/capacity.js';
