!> rbcosim_client: Fortran 2008 binding of the rbcosim C client (interfaces/c/rbcosim_client.h,
!> protocol 1.2). Two layers:
!>  * rbc_*   ISO_C_BINDING interfaces to every C function and bind(C) twins of its structs,
!>            for callers who want the C API as is;
!>  * rbcf_*  thin Fortran-friendly wrappers: Fortran strings in (trailing blanks dropped),
!>            allocatable strings out, optional arguments, arrays as Fortran arrays.
!> Every call returns an rbc status (RBC_OK = 0); after a failure rbcf_error_code(client) is
!> the server's or the library's code ("stale_step", "timeout", ...) and
!> rbcf_error_message(client) a sentence.
!>
!> Array order. Wire arrays are C-order (row-major) doubles. A Fortran array with the
!> same extents in reverse order has the same memory layout, so pass it as is:
!>   kinematics  [n][13]     <-> kin(13, n)          x y z q0 q1 q2 q3 vx vy vz wx wy wz
!>   motions     [n][19]     <-> mot(19, n)          kinematics, then a (m/s^2), alpha (rad/s^2)
!>   wrench      [n][m][6]   <-> wrench(6, m, n)     coefficient c_(j-1) of W(tau) in wrench(:, j, i)
!>   gaps        [n][4]      <-> gaps(4, n)
!>   added mass  [n][6][6]   <-> ma(6, 6, n)         each block transposed: ma(i, j, p) is the
!>                                                   C [p][j][i]; symmetric, so it does not matter
!>   Jacobian    [n][2][6][6] <-> jac(6, 6, 2, n)    jac(:, :, 1, p) = dF/dx, (:, :, 2, p) = dF/dv,
!>                                                   each block transposed: jac(c, r, 1, p) is the
!>                                                   C [p][0][r][c] = dF_r/dx_c -- pass transpose()
!> Units: SI (m, s, rad, N, N m, J), inertial frame; quaternions scalar first, point frame ->
!> inertial. Exchange arrays (rbc_exchange) are owned by the client and valid until its next
!> call; rbcf_kinematics/rbcf_motions/rbcf_gaps give Fortran pointers onto them.
module rbcosim_client
  use, intrinsic :: iso_c_binding
  use rbcosim_client_c
  implicit none
  private
  ! the C layer, re-exported
  public :: RBC_PROTOCOL_VERSION, RBC_PROTOCOL_MAJOR, RBC_OK, RBC_ERR_SERVER, RBC_ERR_TIMEOUT, &
            RBC_ERR_TRANSPORT, RBC_ERR_BAD_REPLY, RBC_ERR_VERSION, RBC_ERR_ARGUMENT, &
            RBC_ERR_NO_MEMORY
  public :: rbc_curve_keys, rbc_coupling, rbc_session_options, rbc_exchange, rbc_inputs
  public :: rbc_connect, rbc_destroy, rbc_set_timeout, rbc_error_code, rbc_error_message, &
            rbc_hello, rbc_server_version, rbc_create_session, rbc_join_session, &
            rbc_session_id, rbc_attach, rbc_set_added_mass, rbc_report, rbc_step, &
            rbc_step_send, rbc_step_wait, rbc_step_index, rbc_time, rbc_save, rbc_restore, &
            rbc_get_state, rbc_set_state, rbc_heartbeat, rbc_detach, rbc_close_session


  ! --- the Fortran layer -------------------------------------------------------------------
  public :: rbcf_connect, rbcf_error_code, rbcf_error_message, rbcf_server_version, &
            rbcf_session_id, rbcf_hello, rbcf_create_session, rbcf_join_session, rbcf_attach, &
            rbcf_set_added_mass, rbcf_report, rbcf_step, rbcf_step_send, rbcf_step_wait, &
            rbcf_save, rbcf_restore, rbcf_get_state, rbcf_set_state, rbcf_scheme, &
            rbcf_kinematics, rbcf_motions, rbcf_gaps, c_string, f_string

  !> NUL-terminated copies of Fortran strings and the C array of pointers to them.
  type :: c_strings
    character(kind=c_char, len=:), allocatable :: text
    type(c_ptr), allocatable :: ptrs(:)
  end type c_strings

  !> Owned inputs for rbc_report / rbc_step_send: a copy of the arrays, so that the
  !> pointers handed to C stay valid for the call.
  type :: owned_inputs
    real(c_double), allocatable :: wrench(:), kin(:), energy(:), jac(:)
    type(rbc_inputs) :: c
  end type owned_inputs

contains

  ! --- strings ---------------------------------------------------------------------------

  !> A NUL-terminated copy of s, trailing blanks dropped.
  pure function c_string(s) result(out)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: out
    out = trim(s) // c_null_char
  end function c_string

  !> The Fortran string a C `const char *` points at ("" for NULL).
  function f_string(p) result(out)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: out
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    if (.not. c_associated(p)) then
      out = ""
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: out)
    do i = 1, n
      out(i:i) = chars(i)
    end do
  end function f_string

  !> Pack Fortran strings as consecutive NUL-terminated strings plus pointers to each.
  subroutine pack_strings(list, packed)
    character(len=*), intent(in) :: list(:)
    type(c_strings), target, intent(out) :: packed
    integer :: i, at
    packed%text = ""
    do i = 1, size(list)
      packed%text = packed%text // trim(list(i)) // c_null_char
    end do
    allocate (packed%ptrs(max(1, size(list))))
    packed%ptrs = c_null_ptr
    at = 1
    do i = 1, size(list)
      packed%ptrs(i) = c_loc(packed%text(at:at))
      at = at + len_trim(list(i)) + 1
    end do
  end subroutine pack_strings

  !> A pointer to an optional NUL-terminated string kept in `keep`, or NULL.
  function optional_string(s, keep) result(p)
    character(len=*), intent(in), optional :: s
    character(kind=c_char, len=:), allocatable, target, intent(inout) :: keep
    type(c_ptr) :: p
    p = c_null_ptr
    if (.not. present(s)) return
    keep = c_string(s)
    p = c_loc(keep)
  end function optional_string

  ! --- connection and errors -------------------------------------------------------------

  !> Connect to `endpoint` (e.g. "tcp://127.0.0.1:5555"); timeout_ms bounds every wait
  !> (<= 0 or absent: forever); CURVE keys optional (all three). The client, or a null
  !> pointer with the reason in `error`.
  function rbcf_connect(endpoint, timeout_ms, server_public, client_public, client_secret, &
                        error) result(client)
    character(len=*), intent(in) :: endpoint
    integer, intent(in), optional :: timeout_ms
    character(len=*), intent(in), optional :: server_public, client_public, client_secret
    character(len=:), allocatable, intent(out), optional :: error
    type(c_ptr) :: client
    type(rbc_curve_keys), target :: keys
    character(kind=c_char, len=:), allocatable, target :: k1, k2, k3
    character(kind=c_char) :: buffer(512)
    type(c_ptr) :: pkeys
    integer(c_int) :: timeout
    integer :: n
    timeout = 0
    if (present(timeout_ms)) timeout = timeout_ms
    pkeys = c_null_ptr
    if (present(server_public) .and. present(client_public) .and. present(client_secret)) then
      keys%server_public = optional_string(server_public, k1)
      keys%client_public = optional_string(client_public, k2)
      keys%client_secret = optional_string(client_secret, k3)
      pkeys = c_loc(keys)
    end if
    buffer = c_null_char
    client = rbc_connect(c_string(endpoint), pkeys, timeout, buffer, &
                         int(size(buffer), c_size_t))
    if (present(error)) then
      n = 0
      do while (n < size(buffer))
        if (buffer(n + 1) == c_null_char) exit
        n = n + 1
      end do
      allocate (character(len=n) :: error)
      error = transfer(buffer(1:n), error)
    end if
  end function rbcf_connect

  !> The error code of the last failed call ("" after success).
  function rbcf_error_code(client) result(s)
    type(c_ptr), intent(in) :: client
    character(len=:), allocatable :: s
    s = f_string(rbc_error_code(client))
  end function rbcf_error_code

  !> The sentence of the last failed call ("" after success).
  function rbcf_error_message(client) result(s)
    type(c_ptr), intent(in) :: client
    character(len=:), allocatable :: s
    s = f_string(rbc_error_message(client))
  end function rbcf_error_message

  function rbcf_server_version(client) result(s)
    type(c_ptr), intent(in) :: client
    character(len=:), allocatable :: s
    s = f_string(rbc_server_version(client))
  end function rbcf_server_version

  function rbcf_session_id(client) result(s)
    type(c_ptr), intent(in) :: client
    character(len=:), allocatable :: s
    s = f_string(rbc_session_id(client))
  end function rbcf_session_id

  !> hello: checks the server speaks protocol major 1.
  integer function rbcf_hello(client, client_name) result(status)
    type(c_ptr), intent(in) :: client
    character(len=*), intent(in) :: client_name
    status = rbc_hello(client, c_string(client_name))
  end function rbcf_hello

  ! --- sessions --------------------------------------------------------------------------

  !> Create a session from a scenario file the server reads (scenario_path) or from TOML
  !> text (scenario_text), exactly one of them; override keys/values as "cosim.macro_step"
  !> / "0.002" (TOML literals); the other options as in rbc_session_options.
  integer function rbcf_create_session(client, scenario_path, scenario_text, base_dir, &
      override_keys, override_values, barrier_timeout, output_every, snapshot_every, &
      wait_for_joints) result(status)
    type(c_ptr), intent(in) :: client
    character(len=*), intent(in), optional :: scenario_path, scenario_text, base_dir
    character(len=*), intent(in), optional :: override_keys(:), override_values(:)
    real(c_double), intent(in), optional :: barrier_timeout
    integer, intent(in), optional :: output_every, snapshot_every
    logical, intent(in), optional :: wait_for_joints
    type(rbc_session_options), target :: options
    character(kind=c_char, len=:), allocatable, target :: path, text, base
    type(c_strings), target :: keys, values
    type(c_ptr) :: ppath, ptext
    ppath = optional_string(scenario_path, path)
    ptext = optional_string(scenario_text, text)
    options%base_dir = optional_string(base_dir, base)
    if (present(override_keys) .neqv. present(override_values)) then
      status = RBC_ERR_ARGUMENT
      return
    end if
    if (present(override_keys)) then
      if (size(override_keys) /= size(override_values)) then
        status = RBC_ERR_ARGUMENT
        return
      end if
      call pack_strings(override_keys, keys)
      call pack_strings(override_values, values)
      options%override_keys = c_loc(keys%ptrs)
      options%override_values = c_loc(values%ptrs)
      options%n_overrides = size(override_keys)
    end if
    if (present(barrier_timeout)) options%barrier_timeout = barrier_timeout
    if (present(output_every)) options%output_every = output_every
    if (present(snapshot_every)) options%snapshot_every = snapshot_every
    if (present(wait_for_joints)) options%wait_for_joints = merge(1, 0, wait_for_joints)
    status = rbc_create_session(client, ppath, ptext, c_loc(options))
  end function rbcf_create_session

  !> Join a session somebody else created (e.g. `rbcosim cosim --serve-external`).
  integer function rbcf_join_session(client, session_id) result(status)
    type(c_ptr), intent(in) :: client
    character(len=*), intent(in) :: session_id
    status = rbc_join_session(client, c_string(session_id))
  end function rbcf_join_session

  !> Attach to points and joints (their order is the row order of every array); fills the
  !> coupling settings and the initial exchange (motions at the session's time).
  integer function rbcf_attach(client, points, joints, coupling, initial, name, force) &
      result(status)
    type(c_ptr), intent(in) :: client
    character(len=*), intent(in) :: points(:), joints(:)
    type(rbc_coupling), intent(out) :: coupling
    type(rbc_exchange), intent(out) :: initial
    character(len=*), intent(in), optional :: name
    logical, intent(in), optional :: force
    type(c_strings), target :: p, j
    character(kind=c_char, len=:), allocatable, target :: cname
    integer(c_int) :: iforce
    call pack_strings(points, p)
    call pack_strings(joints, j)
    iforce = 0
    if (present(force)) iforce = merge(1, 0, force)
    status = rbc_attach(client, c_loc(p%ptrs), size(points, kind=c_int), c_loc(j%ptrs), &
                        size(joints, kind=c_int), optional_string(name, cname), iforce, &
                        coupling, initial)
  end function rbcf_attach

  !> The coupling scheme as a Fortran string.
  function rbcf_scheme(coupling) result(s)
    type(rbc_coupling), intent(in) :: coupling
    character(len=:), allocatable :: s
    integer :: n, i
    n = 0
    do while (n < size(coupling%scheme))
      if (coupling%scheme(n + 1) == c_null_char) exit
      n = n + 1
    end do
    allocate (character(len=n) :: s)
    do i = 1, n
      s(i:i) = coupling%scheme(i)
    end do
  end function rbcf_scheme

  !> Hand the added mass ma(6, 6, n_points) over, once, before the first report; frames
  !> per point "point" or "inertial" (absent: all "point").
  integer function rbcf_set_added_mass(client, added_mass, frames) result(status)
    type(c_ptr), intent(in) :: client
    real(c_double), intent(in), target, contiguous :: added_mass(:, :, :)
    character(len=*), intent(in), optional :: frames(:)
    type(c_strings), target :: f
    type(c_ptr) :: pframes
    pframes = c_null_ptr
    if (present(frames)) then
      call pack_strings(frames, f)
      pframes = c_loc(f%ptrs)
    end if
    status = rbc_set_added_mass(client, c_loc(added_mass), pframes)
  end function rbcf_set_added_mass

  !> Fill C inputs from optional Fortran arrays (copied into `o`).
  subroutine make_inputs(o, wrench, flex_kinematics, flex_energy, interface_jacobian, &
                         kinematics_at_end)
    type(owned_inputs), target, intent(out) :: o
    real(c_double), intent(in), optional :: wrench(:, :, :), flex_kinematics(:, :), &
                                            flex_energy(:), interface_jacobian(:, :, :, :)
    logical, intent(in), optional :: kinematics_at_end
    if (present(wrench)) then
      o%wrench = reshape(wrench, [size(wrench)])
      o%c%wrench = c_loc(o%wrench)
      o%c%wrench_terms = size(wrench, 2)
    end if
    if (present(flex_kinematics)) then
      o%kin = reshape(flex_kinematics, [size(flex_kinematics)])
      o%c%flex_kinematics = c_loc(o%kin)
    end if
    if (present(flex_energy)) then
      o%energy = flex_energy
      o%c%flex_energy = c_loc(o%energy)
    end if
    if (present(interface_jacobian)) then
      o%jac = reshape(interface_jacobian, [size(interface_jacobian)])
      o%c%interface_jacobian = c_loc(o%jac)
    end if
    if (present(kinematics_at_end)) o%c%kinematics_at_end = merge(1, 0, kinematics_at_end)
  end subroutine make_inputs

  !> A report at the current step without stepping: wrench(6, m, n_points) (held from now
  !> on), flex_kinematics(13, n_joints), flex_energy(n_joints) J; all optional.
  integer function rbcf_report(client, out, wrench, flex_kinematics, flex_energy) &
      result(status)
    type(c_ptr), intent(in) :: client
    type(rbc_exchange), intent(out) :: out
    real(c_double), intent(in), optional :: wrench(:, :, :), flex_kinematics(:, :), &
                                            flex_energy(:)
    type(owned_inputs), target :: o
    call make_inputs(o, wrench, flex_kinematics, flex_energy)
    status = rbc_report(client, o%c, out)
  end function rbcf_report

  !> One macro step: send the inputs (see rbcf_step_send) and wait for every client's.
  integer function rbcf_step(client, out, wrench, flex_kinematics, flex_energy, &
                             interface_jacobian, kinematics_at_end) result(status)
    type(c_ptr), intent(in) :: client
    type(rbc_exchange), intent(out) :: out
    real(c_double), intent(in), optional :: wrench(:, :, :), flex_kinematics(:, :), &
                                            flex_energy(:), interface_jacobian(:, :, :, :)
    logical, intent(in), optional :: kinematics_at_end
    status = rbcf_step_send(client, wrench, flex_kinematics, flex_energy, &
                            interface_jacobian, kinematics_at_end)
    if (status == RBC_OK) status = rbc_step_wait(client, out)
  end function rbcf_step

  !> Send this client's inputs of the session's current step: wrench(6, m, n_points),
  !> flex_kinematics(13, n_joints), flex_energy(n_joints) J, interface_jacobian(6, 6, 2,
  !> n_points) (C order, see the module header), kinematics_at_end (.true.: at t_k + H).
  integer function rbcf_step_send(client, wrench, flex_kinematics, flex_energy, &
                                  interface_jacobian, kinematics_at_end) result(status)
    type(c_ptr), intent(in) :: client
    real(c_double), intent(in), optional :: wrench(:, :, :), flex_kinematics(:, :), &
                                            flex_energy(:), interface_jacobian(:, :, :, :)
    logical, intent(in), optional :: kinematics_at_end
    type(owned_inputs), target :: o
    call make_inputs(o, wrench, flex_kinematics, flex_energy, interface_jacobian, &
                     kinematics_at_end)
    status = rbc_step_send(client, o%c)
  end function rbcf_step_send

  !> Wait for the step sent with rbcf_step_send.
  integer function rbcf_step_wait(client, out) result(status)
    type(c_ptr), intent(in) :: client
    type(rbc_exchange), intent(out) :: out
    status = rbc_step_wait(client, out)
  end function rbcf_step_wait

  ! --- exchange arrays -------------------------------------------------------------------

  !> kin(13, n_points) onto the exchange's kinematics (valid until the client's next call).
  function rbcf_kinematics(ex) result(kin)
    type(rbc_exchange), intent(in) :: ex
    real(c_double), pointer :: kin(:, :)
    kin => null()
    if (c_associated(ex%kinematics)) call c_f_pointer(ex%kinematics, kin, [13, ex%n_points])
  end function rbcf_kinematics

  !> mot(19, n_points) onto the exchange's motions.
  function rbcf_motions(ex) result(mot)
    type(rbc_exchange), intent(in) :: ex
    real(c_double), pointer :: mot(:, :)
    mot => null()
    if (c_associated(ex%motions)) call c_f_pointer(ex%motions, mot, [19, ex%n_points])
  end function rbcf_motions

  !> gaps(4, n_joints) onto the exchange's gaps (null after attach).
  function rbcf_gaps(ex) result(gaps)
    type(rbc_exchange), intent(in) :: ex
    real(c_double), pointer :: gaps(:, :)
    gaps => null()
    if (c_associated(ex%gaps)) call c_f_pointer(ex%gaps, gaps, [4, ex%n_joints])
  end function rbcf_gaps

  ! --- state -----------------------------------------------------------------------------

  !> A named snapshot on the server (name absent: "default"), optionally also a file.
  integer function rbcf_save(client, name, path) result(status)
    type(c_ptr), intent(in) :: client
    character(len=*), intent(in), optional :: name, path
    character(kind=c_char, len=:), allocatable, target :: n, p
    status = rbc_save(client, optional_string(name, n), optional_string(path, p))
  end function rbcf_save

  !> Restore a named snapshot or a file written by save (one of them).
  integer function rbcf_restore(client, name, path) result(status)
    type(c_ptr), intent(in) :: client
    character(len=*), intent(in), optional :: name, path
    character(kind=c_char, len=:), allocatable, target :: n, p
    status = rbc_restore(client, optional_string(name, n), optional_string(path, p))
  end function rbcf_restore

  !> The rigid side's state as an opaque blob (bytes), its step index and time (s).
  integer function rbcf_get_state(client, blob, step, time) result(status)
    type(c_ptr), intent(in) :: client
    integer(c_int8_t), allocatable, intent(out) :: blob(:)
    integer(c_long), intent(out) :: step
    real(c_double), intent(out) :: time
    type(c_ptr) :: p
    integer(c_size_t) :: n
    integer(c_int8_t), pointer :: bytes(:)
    status = rbc_get_state(client, p, n, step, time)
    if (status /= RBC_OK) return
    call c_f_pointer(p, bytes, [n])
    blob = bytes
    call c_free(p)
  end function rbcf_get_state

  !> Set the rigid side's state from rbcf_get_state's blob, resuming at `step`.
  integer function rbcf_set_state(client, blob, step) result(status)
    type(c_ptr), intent(in) :: client
    integer(c_int8_t), intent(in), target, contiguous :: blob(:)
    integer(c_long), intent(in) :: step
    status = rbc_set_state(client, c_loc(blob), size(blob, kind=c_size_t), step)
  end function rbcf_set_state

end module rbcosim_client
