import type * as v from 'valibot';
import type { ChangePasswordBody, CreateUserBody, LoginBody, PatchUserBody } from '../../contract/requests.js';

export type { Role } from '../../contract/resources.js';

export type LoginInput = v.InferOutput<typeof LoginBody>;
export type ChangePasswordInput = v.InferOutput<typeof ChangePasswordBody>;
export type CreateUserInput = v.InferOutput<typeof CreateUserBody>;
export type PatchUserInput = v.InferOutput<typeof PatchUserBody>;
